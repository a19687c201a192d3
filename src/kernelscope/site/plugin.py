"""The mkdocs plugin that turns ``results/`` into pages at build time.

Registered as ``kernelscope`` (pyproject's ``mkdocs.plugins`` entry point) and
listed in ``mkdocs.yml``. On every build it

* loads the stored results and the profiling artifacts once
  (:class:`~kernelscope.site.data.SiteData`, ``results/`` and ``profiles/``);
* fills the nav's ``Results`` section and adds the generated pages
  (:data:`~kernelscope.site.pages.PAGES`, and the profiling pages of
  :mod:`~kernelscope.site.profile_pages`), the JSON the charts read, and the
  artifact files a reader downloads (chrome traces, Nsight Compute's printout);
* ships the chart library's files from ``node_modules`` (``npm ci``), so no
  request leaves the site's own host;
* renders every hand-written page as a Jinja template with
  :class:`~kernelscope.site.macros.Macros`, strictly: an undefined name fails
  the build;
* points pymdownx.snippets at the repository, so pages include real files.

Nothing it generates is written into ``docs/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jinja2
from mkdocs.config import config_options
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files

from kernelscope.site import pages, peer_pages, profile_pages
from kernelscope.site.data import SiteData
from kernelscope.site.evidence import EVIDENCE_ENV, EvidenceError
from kernelscope.site.macros import Macros
from kernelscope.site.profiles import PROFILES_ENV, ProfilesError
from kernelscope.site.sources import ROOT as SOURCE_ROOT

# The chart library, shipped with the site: (file under node_modules, path in the site).
VENDOR = [("vega/build/vega.min.js", "assets/vendor/vega.min.js"),
          ("vega-lite/build/vega-lite.min.js", "assets/vendor/vega-lite.min.js"),
          ("vega-embed/build/vega-embed.min.js", "assets/vendor/vega-embed.min.js")]
RESULTS_NAV = "results/"  # the nav value the plugin replaces with the generated pages
# KERNELSCOPE_RESULTS_DIR builds the site from another results folder (the tests' fixtures)
RESULTS_ENV = "KERNELSCOPE_RESULTS_DIR"
# KERNELSCOPE_PROFILES_DIR: the same for profiles/ (a missing folder builds pages that say "No profiles yet")
# KERNELSCOPE_EVIDENCE_DIR: the same for evidence/ (peers.json per machine; none: the page gives the command)


class KernelscopeConfig(Config):
    results_dir = config_options.Type(str, default="results")
    profiles_dir = config_options.Type(str, default="profiles")
    evidence_dir = config_options.Type(str, default="evidence")
    node_modules = config_options.Type(str, default="node_modules")
    machine = config_options.Optional(config_options.Type(str))  # the machine concept pages quote


class KernelscopePlugin(BasePlugin[KernelscopeConfig]):
    def on_config(self, config):
        root = Path(config.config_file_path).resolve().parent
        if SOURCE_ROOT != root:
            raise PluginError(f"kernelscope is imported from {SOURCE_ROOT}, not from this repository ({root}): "
                              "the site includes kernel sources from the repository, so install it editable "
                              "(pip install -e .)")
        results_dir = Path(os.environ.get(RESULTS_ENV) or root / self.config.results_dir)
        profiles_dir = Path(os.environ.get(PROFILES_ENV) or root / self.config.profiles_dir)
        evidence_dir = Path(os.environ.get(EVIDENCE_ENV) or root / self.config.evidence_dir)
        try:
            self.data = SiteData(results_dir, root, profiles_dir, evidence_dir)
        except ProfilesError as exc:
            raise PluginError(f"kernelscope: cannot read profiles from {profiles_dir}: {exc}") from exc
        except EvidenceError as exc:
            raise PluginError(f"kernelscope: cannot read evidence from {evidence_dir}: {exc}") from exc
        except (OSError, ValueError) as exc:
            raise PluginError(f"kernelscope: cannot read results from {results_dir}: {exc}") from exc
        if self.config.machine and self.config.machine not in self.data.machines and not self.data.empty:
            raise PluginError(f"kernelscope: machine {self.config.machine!r} has no results "
                              f"(machines: {', '.join(self.data.machines)})")
        self.macros = Macros(self.data, self.config.machine)
        self.node_modules = root / self.config.node_modules
        snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
        snippets["base_path"] = [str(root)]
        snippets["check_paths"] = True
        config.nav = self._nav(config.nav)
        self.jinja = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,
                                        keep_trailing_newline=True)
        return config

    def _nav(self, nav):
        """Replace ``Results: results/`` with the generated pages."""
        generated = ([{pages.NAV_TITLES[path]: path} for path in pages.PAGES] + peer_pages.nav()
                     + profile_pages.nav(self.data.profiles))
        if nav is None:
            return nav
        found = False
        for i, item in enumerate(nav):
            if isinstance(item, dict) and RESULTS_NAV in item.values():
                title = next(iter(item))
                nav[i] = {title: generated}
                found = True
        if not found:
            raise PluginError(f"kernelscope: mkdocs.yml's nav needs an entry `- Results: {RESULTS_NAV}` for the "
                              "generated results pages")
        return nav

    def on_files(self, files: Files, config) -> Files:
        for path, render in pages.PAGES.items():
            try:
                content = render(self.data)
            except Exception as exc:
                raise PluginError(f"kernelscope: generating {path} failed: {type(exc).__name__}: {exc}") from exc
            files.append(File.generated(config, path, content=content))
        try:
            generated = profile_pages.pages(self.data)
        except Exception as exc:
            raise PluginError(f"kernelscope: generating the profile pages failed: {type(exc).__name__}: {exc}") from exc
        for path, content in generated.items():
            files.append(File.generated(config, path, content=content))
        try:
            files.append(File.generated(config, peer_pages.PATH, content=peer_pages.page(self.data.evidence)))
        except Exception as exc:
            raise PluginError(f"kernelscope: generating {peer_pages.PATH} failed: {type(exc).__name__}: {exc}") from exc
        for path, records in {**pages.data_files(self.data), **profile_pages.data_files(self.data)}.items():
            files.append(File.generated(config, path, content=json.dumps(records, allow_nan=False, default=str)))
        for src, dest in self.data.profiles.files():  # traces and ncu printouts, for download
            files.append(File.generated(config, dest, abs_src_path=str(src)))
        for src, dest in VENDOR:
            full = self.node_modules / src
            if not full.exists():
                raise PluginError(f"kernelscope: {full} is missing: the site ships the chart library from npm; "
                                  "run `npm ci` in the repository (`make install` does)")
            files.append(File.generated(config, dest, abs_src_path=str(full)))
        return files

    def on_page_markdown(self, markdown: str, page, config, files):
        if page.file.generated_by:
            return markdown
        try:
            return self.jinja.from_string(markdown).render(**self.macros.namespace())
        except jinja2.TemplateError as exc:
            where = f"{page.file.src_uri}" + (f", line {exc.lineno}" if getattr(exc, "lineno", None) else "")
            raise PluginError(f"kernelscope: {where}: {exc}") from exc
        except (KeyError, LookupError) as exc:
            raise PluginError(f"kernelscope: {page.file.src_uri}: {exc.args[0] if exc.args else exc}") from exc
