"""The compiled code of a variant's kernels, per backend, as files beside its profile.json.

* Triton: each kernel the variant launched (recorded at ``JITFunction.run``
  during one call), from its ``CompiledKernel``: PTX, SASS (Triton runs
  ``cuobjdump`` for it), registers, spills, shared memory. GPU only: the
  interpreter compiles nothing.
* CUDA C++: the variant's ``.cu`` file (``backends/cuda/<op>.cu``) through
  ``nvcc -c -Xptxas -v -keep`` (PTX, and ptxas's resource report per kernel),
  and ``cuobjdump -sass`` of that object (:mod:`kernelscope.profiling.nvcc`,
  which keeps them per version of the file). No GPU needed: this is what
  CI tests. The variant's kernels are the ``__global__`` functions its launcher
  (``launch_<impl function>``) launches, directly or through helpers in the
  same file; :data:`CUDA_KERNELS` names them where that convention does not hold.
* Numba: each kernel launched during one call (recorded at ``_Kernel.launch``):
  PTX, SASS where nvdisasm is present, registers, shared and local memory. GPU
  only: the simulator compiles nothing.
* torch.compile: the module Inductor generated (Triton on a GPU, C++ on the
  CPU), recompiled once under ``run_and_get_code``.
* torch eager: nothing to capture; ATen's kernels are prebuilt (their names are
  in the profiler's table).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kernelscope import backends
from kernelscope.profiling import nvcc
from kernelscope.profiling.artifacts import CodeArtifact, write_text
from kernelscope.profiling.tools import find_tool, version_output

CUDA_DIR = Path(backends.__file__).parent / "cuda"
ARCH = nvcc.ARCH  # the H100's: the code the lecture's GPU and ours run
NVCC_FLAGS = nvcc.FLAGS
# Variant -> its kernels, for launchers that do not follow launch_<impl function>; empty while all do.
CUDA_KERNELS: dict[str, tuple[str, ...]] = {}


@dataclass
class Captured:
    artifacts: list[CodeArtifact] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def capture(variant, x: torch.Tensor | None, out_dir: Path, dtype: str = "float32",
            launched: list[str] | None = None) -> Captured:
    """The code of ``variant``'s kernels on input ``x`` (None where it cannot run here) in ``dtype``, into out_dir.

    ``launched``: the kernel names the profiler saw the variant launch (on a GPU), which pick a CUDA C++
    kernel's template instantiations out of those its launcher can choose from.
    """
    out = Captured()
    part = {"torch": None, "torch-compile": _inductor, "triton": _triton, "cuda": _cuda, "numba": _numba}
    if variant.backend not in part:
        out.skipped["code"] = f"no code capture for backend {variant.backend}"
        return out
    if part[variant.backend] is None:
        out.skipped["code"] = ("PyTorch eager runs ATen's prebuilt kernels: no source is generated "
                               "(their names are in the profiler table)")
        return out
    try:
        part[variant.backend](variant, x, dtype, Path(out_dir), out, launched)
    except Exception as exc:  # one backend's tool failing is this variant's error, not the run's
        out.errors["code"] = f"{type(exc).__name__}: {exc}"
    return out


def _save(out_dir: Path, name: str, text: str) -> str:
    write_text(out_dir / name, text)
    return name


def _unique(name: str, taken: set[str]) -> str:
    base, i = name, 1
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    taken.add(name)
    return name


def safe(name: str) -> str:
    """A kernel name as a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]


# --- tools -------------------------------------------------------------------------------------------------------


def tool_version(name: str) -> str:
    path = find_tool(name)
    if not path:
        return "not found"
    out = version_output(path)
    if out is None:
        return "unknown"
    found = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return found.group(2) if found else "unknown"


# --- recording what ran ------------------------------------------------------------------------------------------


@contextmanager
def _recording(cls, method: str, take):
    """Patch ``cls.method`` so each call also appends ``take(self, result)`` (when not None) to the yielded list."""
    seen: list = []
    original = getattr(cls, method)

    def recorder(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        got = take(self, result)
        if got is not None and all(got is not s for s in seen):
            seen.append(got)
        return result

    setattr(cls, method, recorder)
    try:
        yield seen
    finally:
        setattr(cls, method, original)


def _one_call(variant, x):
    variant.function()(x)
    if x.is_cuda:
        torch.cuda.synchronize()


# --- Triton ------------------------------------------------------------------------------------------------------


def _triton(variant, x, dtype: str, out_dir: Path, out: Captured, launched=None) -> None:
    if x is None or not x.is_cuda:
        out.skipped["code"] = ("the Triton interpreter (TRITON_INTERPRET=1) runs kernels as Python: nothing is "
                               "compiled, so there is no PTX or SASS (run on a GPU)")
        return
    from triton.runtime.jit import JITFunction

    from kernelscope.backends.triton import direct

    direct.forget()  # a direct launch (square-triton-direct) passes JITFunction.run only on its first call
    with _recording(JITFunction, "run", lambda self, kernel: kernel) as ran:
        _one_call(variant, x)
    if not ran:
        out.errors["code"] = "no Triton kernel launched during a call"
    taken: set[str] = set()
    for ck in ran:
        name = _unique(safe(getattr(ck.metadata, "name", None) or getattr(ck, "name", "kernel")), taken)
        res = dict(registers=getattr(ck, "n_regs", None), spills=getattr(ck, "n_spills", None),
                   shared_bytes=getattr(ck.metadata, "shared", None))
        out.artifacts.append(CodeArtifact("ptx", name, _save(out_dir, f"{name}.ptx", ck.asm["ptx"]), "ptx", **res,
                                          source="triton CompiledKernel.asm['ptx']"))
        try:
            sass = ck.asm["sass"]  # Triton disassembles the cubin with cuobjdump on first access
        except Exception as exc:
            out.skipped["sass"] = f"Triton could not disassemble the cubin (needs cuobjdump): {exc}"
            continue
        out.artifacts.append(CodeArtifact("sass", name, _save(out_dir, f"{name}.sass", sass), "nasm", **res,
                                          source="triton CompiledKernel.asm['sass'] (cuobjdump)"))


# --- Numba -------------------------------------------------------------------------------------------------------


def _demangled_last_name(symbol: str) -> str:
    """The innermost name of an Itanium-mangled nested symbol (``_ZN6cudapy...23square_coalesced_kernelB2v1E...``)."""
    if not symbol.startswith("_ZN"):
        return symbol
    names, i = [], 3
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        size = int(symbol[i:j])
        names.append(symbol[j:j + size])
        i = j + size
    return names[-1] if names else symbol


def numba_kernel_name(kernel) -> str:
    """A Numba kernel's Python name. A kernel loaded from Numba's on-disk cache (``cache=True``) is rebuilt
    without its ``py_func``; its mangled entry name still carries the name."""
    py_func = getattr(kernel, "py_func", None)
    return py_func.__name__ if py_func is not None else _demangled_last_name(kernel.entry_name)


def _numba(variant, x, dtype: str, out_dir: Path, out: Captured, launched=None) -> None:
    if x is None or not x.is_cuda or backends.numba_simulated():
        out.skipped["code"] = ("the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as Python threads: "
                               "nothing is compiled, so there is no PTX (run on a GPU)")
        return
    from numba.cuda.dispatcher import _Kernel

    from kernelscope.backends.numba import direct

    direct.forget()  # a direct launch (square-numba-direct) passes Numba's _Kernel.launch only on its first call
    with _recording(_Kernel, "launch", lambda self, _: self) as ran:
        _one_call(variant, x)
    if not ran:
        out.errors["code"] = "no Numba kernel launched during a call"
    cc = torch.cuda.get_device_capability()
    taken: set[str] = set()
    for kernel in ran:
        name = _unique(safe(numba_kernel_name(kernel)), taken)
        res = dict(registers=kernel.regs_per_thread, shared_bytes=kernel.shared_mem_per_block,
                   spills=kernel.local_mem_per_thread)
        out.artifacts.append(CodeArtifact("ptx", name, _save(out_dir, f"{name}.ptx", kernel.inspect_asm(cc)), "ptx",
                                          **res, source="numba _Kernel.inspect_asm"))
        try:
            sass = kernel.inspect_sass()  # needs nvdisasm on PATH
        except Exception as exc:
            out.skipped["sass"] = f"Numba could not disassemble the kernel (needs nvdisasm on PATH): {exc}"
            continue
        out.artifacts.append(CodeArtifact("sass", name, _save(out_dir, f"{name}.sass", sass), "nasm", **res,
                                          source="numba _Kernel.inspect_sass (nvdisasm)"))


# --- torch.compile -----------------------------------------------------------------------------------------------

_GENERATED_KERNEL = re.compile(r"^(\w+) = async_compile\.(?:triton|cpp_pybinding|cpp|cuda)\(", re.M)


def generated_kernels(module_code: str) -> list[str]:
    """The kernels an Inductor output module defines, in order."""
    return _GENERATED_KERNEL.findall(module_code)


def _inductor(variant, x, dtype: str, out_dir: Path, out: Captured, launched=None) -> None:
    if x is None:
        out.skipped["code"] = "the variant does not run here"
        return
    from torch._inductor.utils import run_and_get_code

    # run_and_get_code resets dynamo, so this call compiles again (Inductor's caches make it quick)
    # and hands over the module it generated.
    _, modules = run_and_get_code(variant.function(), x)
    if not modules:
        out.errors["code"] = "Inductor generated no module"
    language = "Triton" if x.is_cuda else "C++"
    for i, code in enumerate(modules):
        name = "inductor" if i == 0 else f"inductor-{i + 1}"
        out.artifacts.append(CodeArtifact("inductor", ", ".join(generated_kernels(code)) or name,
                                          _save(out_dir, f"{name}.py", code), "python",
                                          source=f"torch._inductor.utils.run_and_get_code ({language} kernels)"))


# --- CUDA C++ ----------------------------------------------------------------------------------------------------

_GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")
_CALL = re.compile(r"\b(\w+)\s*(?:<[^<>;]*>)?\s*(?:\(|<<<)")


def _body(source: str, name: str) -> str | None:
    """The body of the function defined as ``name(...) {...}`` in ``source`` (a definition, not a call)."""
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", source):
        i, depth = m.end(), 1
        while i < len(source) and depth:  # skip the parameter list
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        rest = source[i:]
        head = re.match(r"\s*(?:const\s*)?\{", rest)
        if not head:
            continue  # a call or a declaration
        start = i + head.end()
        j, depth = start, 1
        while j < len(source) and depth:
            depth += {"{": 1, "}": -1}.get(source[j], 0)
            j += 1
        return source[start:j - 1]
    return None


def cuda_source(variant) -> Path:
    return CUDA_DIR / f"{variant.op}.cu"


def cuda_files(path: Path) -> list[Path]:
    """``path`` and the headers of its folder it includes: the files that hold its kernels and its launcher's
    helpers (softmax.cu's are in its headers)."""
    from kernelscope.backends.cuda.build import included

    return [path, *included(path)] if path.exists() else [path]


def cuda_kernels(variant) -> list[str]:
    """The ``__global__`` functions ``variant`` launches, from its launcher in ``backends/cuda/<op>.cu`` (and the
    headers it includes)."""
    if variant.name in CUDA_KERNELS:
        return list(CUDA_KERNELS[variant.name])
    path = cuda_source(variant)
    if not path.exists():
        raise FileNotFoundError(f"{variant.name}: no {path.name} in {CUDA_DIR}")
    text = "\n".join(f.read_text() for f in cuda_files(path))
    source = re.sub(r"//[^\n]*", "", text)  # a kernel named in a comment is not launched
    kernels = set(_GLOBAL.findall(source))
    launcher = f"launch_{variant.impl.rsplit(':', 1)[1]}"
    found: list[str] = []
    todo, done = [launcher], set()
    while todo:  # the launcher and the host helpers it calls, in this file
        fn = todo.pop(0)
        done.add(fn)
        body = _body(source, fn)
        if body is None:
            if fn == launcher:
                raise LookupError(f"{variant.name}: {path.name} defines no {launcher}(); name its kernels in "
                                  f"kernelscope.profiling.code.CUDA_KERNELS")
            continue
        for name in re.findall(r"\b\w+\b", body):
            if name in kernels and name not in found:
                found.append(name)
        for name in _CALL.findall(body):
            if name not in done and name not in kernels and name not in todo and _body(source, name) is not None:
                todo.append(name)
    if not found:
        raise LookupError(f"{variant.name}: {launcher}() in {path.name} launches no __global__ function")
    return found


def mangled_matches(mangled: str, kernel: str) -> bool:
    """Whether a (possibly C++-mangled) symbol is the function ``kernel``: <length><name> in Itanium mangling."""
    return mangled == kernel or re.search(rf"(?<!\d){len(kernel)}{re.escape(kernel)}", mangled) is not None


_BUILTIN = {"f": "float", "d": "double", "i": "int", "j": "unsigned int", "l": "long", "m": "unsigned long",
            "b": "bool", "c": "char", "h": "unsigned char", "s": "short", "t": "unsigned short", "x": "long long",
            "y": "unsigned long long", "v": "void"}
_LITERAL_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}


def template_args(mangled: str, kernel: str) -> list[str] | None:
    """The template arguments of ``kernel``'s instantiation in an Itanium-mangled symbol, as a demangler prints
    them ("float", "4", "__nv_bfloat16"); [] for a plain function, None where this small decoder gives up."""
    marker = f"{len(kernel)}{kernel}"
    at = mangled.find(marker)
    if at < 0:
        return [] if mangled == kernel else None
    rest = mangled[at + len(marker):]
    if not rest.startswith("I"):
        return []
    args, i = [], 1
    while i < len(rest) and rest[i] != "E":
        c = rest[i]
        if c in _BUILTIN:
            args.append(_BUILTIN[c])
            i += 1
        elif c.isdigit():
            n = re.match(r"\d+", rest[i:]).group(0)
            args.append(rest[i + len(n):i + len(n) + int(n)])
            i += len(n) + int(n)
        elif c == "L":  # a literal: L <type> <value> E
            lit = re.match(r"L([a-z])(n?)(\d+)E", rest[i:])
            if not lit:
                return None
            kind, neg, digits = lit.groups()
            if kind == "b":
                args.append("true" if digits == "1" else "false")
            else:
                args.append(("-" if neg else "") + digits + _LITERAL_SUFFIX.get(kind, ""))
            i += lit.end()
        else:
            return None
    return args


def display_name(mangled: str, kernel: str) -> str:
    """``kernel<float, 4>`` for a template instantiation, ``kernel`` for a plain function, else the symbol."""
    args = template_args(mangled, kernel)
    if args is None:
        return mangled
    return f"{kernel}<{', '.join(args)}>" if args else kernel


_CPP_TYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}


def _squeezed(name: str) -> str:
    return re.sub(r"\s+", "", name)


def select_symbols(symbols: list[str], kernel: str, dtype: str, launched: list[str] | None = None
                   ) -> list[tuple[str, str]]:
    """(symbol, display name) of ``kernel`` among ``symbols``: of a template's instantiations, those for ``dtype``;
    of those, the ones the profiler saw launched (``launched``: kernel names as it prints them), if any."""
    found = [(s, display_name(s, kernel)) for s in symbols if mangled_matches(s, kernel)]
    typed = [(s, shown) for s, shown in found if "<" not in shown or _CPP_TYPE.get(dtype, "?") in
             [a.strip() for a in shown[shown.index("<") + 1:-1].split(",")]]
    found = typed or found
    if launched:
        ran = [_squeezed(n) for n in launched]
        seen = [(s, shown) for s, shown in found if any(_squeezed(shown) + "(" in n for n in ran)]
        found = seen or found
    return found


@dataclass
class PtxModule:
    header: str  # up to .address_size
    declarations: list[str]  # module-level .global/.shared/.const lines and .func prototypes
    functions: dict[str, str]  # .entry and .func name -> its text


_FUNC_START = re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b")
_FUNC_NAME = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")


def parse_ptx(ptx: str) -> PtxModule:
    lines = ptx.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith(".address_size")), -1)
    module = PtxModule("\n".join(lines[:end + 1]), [], {})
    i = end + 1
    while i < len(lines):
        line = lines[i]
        if _FUNC_START.match(line):
            chunk, depth, opened = [], 0, False
            while i < len(lines):
                chunk.append(lines[i])
                depth += lines[i].count("{") - lines[i].count("}")
                opened = opened or "{" in lines[i]
                i += 1
                if (opened and depth == 0) or (not opened and chunk[-1].rstrip().endswith(";")):
                    break
            text = "\n".join(chunk)
            name = _FUNC_NAME.search(text).group(1)
            if opened:
                module.functions[name] = text
            else:
                module.declarations.append(text)
            continue
        if line.strip() and not line.lstrip().startswith("//"):
            module.declarations.append(line)
        i += 1
    return module


def kernel_ptx(module: PtxModule, entry: str) -> str:
    """One entry's PTX, with the header, the .func bodies it calls and the declarations they use."""
    keep, todo = [], [entry]
    while todo:
        name = todo.pop(0)
        if name in keep or name not in module.functions:
            continue
        keep.append(name)
        todo += re.findall(r"call(?:\.uni)?\s+(?:\([^)]*\),\s*)?([\w$]+)", module.functions[name])
    body = "\n\n".join(module.functions[n] for n in reversed(keep))
    words = set(re.findall(r"[\w$]+", body))
    decls = [d for d in module.declarations if (_declared(d) or "") in words]
    return "\n\n".join([module.header, *(["\n".join(decls)] if decls else []), body]) + "\n"


def _declared(decl: str) -> str | None:
    if _FUNC_START.match(decl):
        found = _FUNC_NAME.search(decl)
    else:
        found = re.search(r"([\w$]+)\s*(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;\s*$", decl)
    return found.group(1) if found else None


def parse_ptxas(report: str) -> dict[str, dict]:
    """``-Xptxas -v`` output -> entry symbol -> {registers, shared_bytes, spill_stores, spill_loads, text}."""
    out: dict[str, dict] = {}
    parts = re.split(r"(?=^ptxas info\s*: Compiling entry function ')", report, flags=re.M)
    for part in parts:
        head = re.match(r"ptxas info\s*: Compiling entry function '([^']+)'", part)
        if not head:
            continue

        def grab(pattern: str) -> int | None:
            m = re.search(pattern, part)
            return int(m.group(1)) if m else None

        out[head.group(1)] = {
            "registers": grab(r"Used (\d+) registers"),
            "shared_bytes": grab(r"(\d+) bytes smem") or 0,
            "spill_stores": grab(r"(\d+) bytes spill stores"),
            "spill_loads": grab(r"(\d+) bytes spill loads"),
            "stack_bytes": grab(r"(\d+) bytes stack frame"),
            "text": "\n".join(line for line in part.strip().splitlines() if "Compile time" not in line) + "\n",
        }
    return out


_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]+ \*/\s*$")


def split_sass(dump: str) -> dict[str, str]:
    """``cuobjdump -sass`` -> function symbol -> its instructions (the encoding columns dropped)."""
    out: dict[str, str] = {}
    name, lines = None, []
    for line in dump.splitlines() + ["Fatbin"]:
        head = re.match(r"\s*Function : (\S+)", line)
        if head or line.startswith("Fatbin") or line.strip().startswith(".........."):
            if name:
                out[name] = "\n".join(lines).rstrip() + "\n"
            name, lines = (head.group(1), [line.strip()]) if head else (None, [])
            continue
        if name is None:
            continue
        cleaned = _ENCODING.sub("", line)
        if cleaned.strip():
            lines.append(cleaned.rstrip())
    return out


def _cuda(variant, x, dtype: str, out_dir: Path, out: Captured, launched=None) -> None:
    # No GPU needed: nvcc and cuobjdump work on the source alone, so x is not used.
    if find_tool("nvcc") is None:
        out.skipped["code"] = "nvcc not found (install the CUDA toolkit, or set CUDA_HOME)"
        return
    path = cuda_source(variant)
    kernels = cuda_kernels(variant)
    compiled = nvcc.compile_for_reading(path, ARCH, NVCC_FLAGS)
    module = parse_ptx(compiled.ptx)
    report = parse_ptxas(compiled.ptxas)
    try:
        sass = split_sass(compiled.sass())
    except RuntimeError as exc:
        sass = {}
        out.skipped["sass"] = str(exc)
    if launched:  # a launcher with several paths (tiled, grid-stride): keep the kernels that ran
        ran = [_squeezed(n) for n in launched]
        kernels = [k for k in kernels if any(_squeezed(shown) + "(" in n for _, shown in
                                             select_symbols(list(module.functions), k, dtype) for n in ran)] or kernels
    taken: set[str] = set()
    for kernel in kernels:
        symbols = select_symbols(list(module.functions), kernel, dtype, launched)
        if not symbols:
            out.errors[f"code:{kernel}"] = f"{kernel} is not in the PTX of {path.name}"
        for symbol, shown in symbols:
            name = _unique(safe(re.sub(r"[<>,\s]+", "-", shown).strip("-")), taken)
            res = report.get(symbol, {})
            counts = dict(registers=res.get("registers"), shared_bytes=res.get("shared_bytes"),
                          spills=res.get("spill_stores"))
            out.artifacts.append(CodeArtifact("ptx", shown, _save(out_dir, f"{name}.ptx", kernel_ptx(module, symbol)),
                                              "ptx", **counts, source=f"nvcc -ptx -arch={ARCH} {path.name}"))
            if res:
                out.artifacts.append(CodeArtifact("ptxas", shown, _save(out_dir, f"{name}.ptxas.txt", res["text"]),
                                                  "text", **counts,
                                                  source=f"nvcc -c -Xptxas -v -arch={ARCH} {path.name}"))
            else:
                out.errors[f"ptxas:{kernel}"] = f"no ptxas report for {symbol}"
            if symbol in sass:
                out.artifacts.append(CodeArtifact("sass", shown, _save(out_dir, f"{name}.sass", sass[symbol]),
                                                  "nasm", **counts, source="cuobjdump -sass of nvcc's object"))
