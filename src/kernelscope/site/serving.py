"""A built site served on 127.0.0.1 for headless Chromium to read: the browser tests and scripts/site_screens.py.

The charts fetch their data over http, so a built site is looked at served, never as file:// pages.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import socketserver
import threading
from pathlib import Path


# Chromium's flags for a closed network (and as root): without the background-networking ones it dials Google's hosts.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(directory: Path):
    """Serve ``directory`` on a free port of 127.0.0.1 while the block runs; yields its base URL."""
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=directory))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
