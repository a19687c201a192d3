"""The kernelscope command line: list the catalog, check every variant, export results."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

EPILOG = """\
examples:
  kernelscope list                      the catalog: ops, variants, backends, what each needs
  kernelscope check                     every variant against the float64 reference on this machine
  kernelscope check --op softmax --json one JSON record per variant, for scripts
  kernelscope results --csv             every stored asv result as a tidy table

Without a GPU, Triton runs under TRITON_INTERPRET=1 and Numba under
NUMBA_ENABLE_CUDASIM=1 (set automatically); CUDA C++ variants are skipped with
the reason.
"""


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def cmd_list(args) -> int:
    from kernelscope import backends
    from kernelscope.catalog import OPS, select

    variants = select(op=args.op, backend=args.backend)
    if args.json:
        records = [{
            "op": v.op, "variant": v.name, "backend": v.backend, "teaches": v.teaches, "dtypes": list(v.dtypes),
            "lecture": v.lecture, "needs": v.needs, "impl": v.impl, "max_cols": v.max_cols,
        } for v in variants]
        print(json.dumps({"ops": {name: op.summary for name, op in OPS.items()},
                          "backends": {b.name: b.summary for b in backends.BACKENDS.values()},
                          "variants": records}, indent=2))
        return 0
    rows = [[v.op, v.name, v.backend, ",".join(d.replace("float", "f") for d in v.dtypes),
             "yes" if v.lecture else "", v.teaches] for v in variants]
    print(_table(rows, ["op", "variant", "backend", "dtypes", "lecture", "what it teaches"]))
    return 0


def _fmt_err(x: float | None) -> str:
    if x is None:
        return ""
    return "nan" if math.isnan(x) else f"{x:.1e}"


def cmd_check(args) -> int:
    from kernelscope import backends
    from kernelscope.catalog import select
    from kernelscope.check import FAIL, PASS, check_variant

    variants = select(op=args.op, variant=args.variant, backend=args.backend)
    device = args.device or backends.default_device()
    dtypes = tuple(args.dtype) if args.dtype else None
    results = []
    start = time.perf_counter()
    for i, v in enumerate(variants, 1):
        t0 = time.perf_counter()
        res = check_variant(v, device=device, dtypes=dtypes, seed=args.seed)
        results.append(res)
        if not args.quiet:
            print(f"[{i}/{len(variants)}] {v.name:<24} {res.status} ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr, flush=True)
    n_fail = sum(r.status == FAIL for r in results)
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        rows = [[r.op, r.variant, r.backend, r.status, _fmt_err(r.max_rel_err),
                 "" if r.worst_margin is None else f"{r.worst_margin:.2f}",
                 r.reason if r.status != PASS else f"{len(r.shapes)} cases" + (f"; {r.not_run}" if r.not_run else "")]
                for r in results]
        print(_table(rows, ["op", "variant", "backend", "status", "max_rel_err", "err/tol", "detail"]))
        counts = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
        print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped on {device} "
              f"in {time.perf_counter() - start:.0f} s")
    return 1 if n_fail else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelscope", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="the catalog of ops and variants")
    p.add_argument("--op", help="only this op")
    p.add_argument("--backend", help="only this backend (torch, torch-compile, triton, cuda, numba)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="check variants against the float64 reference (exit 1 on any FAIL)",
                       description="Run every selected variant on fresh random inputs at edge shapes "
                                   "(1 element, primes, rows wider than one block), output poisoned "
                                   "with NaN first, and compare with the float64 reference.")
    p.add_argument("--op", help="only this op")
    p.add_argument("--variant", help="only this variant (see `kernelscope list`)")
    p.add_argument("--backend", help="only this backend")
    p.add_argument("--dtype", action="append", choices=["float32", "float16", "bfloat16"],
                   help="only these dtypes (repeatable; default: every dtype the variant supports)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda if torch sees a GPU, else cpu")
    p.add_argument("--seed", type=int, help="fix the input seed (default: fresh random inputs every run)")
    p.add_argument("--json", action="store_true", help="one JSON record per variant on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyError as exc:  # unknown op / variant / backend: the message lists the known names
        print(f"kernelscope: {exc.args[0]}", file=sys.stderr)
        return 2
