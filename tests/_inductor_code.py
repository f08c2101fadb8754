"""Read the program Inductor generates (the wrapper code ``run_and_get_code`` returns, CPU/C++ backend):
which generated kernel writes which buffer from which, and the buffers' sizes and strides.

The tests use it as the oracle of what the compiled program does, beside the profiler (each generated
kernel is a profiler event with ``cpp.enable_kernel_profile``): it never reads Inductor's IR or fxlint's
reader of it, only the code that runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod

_ALLOC = re.compile(r"^\s+(buf\w+) = empty_strided_cpu\(\(([^)]*)\), \(([^)]*)\), torch\.(\w+)\)", re.M)
_INPUT = re.compile(r"^\s+assert_size_stride\((\w+), \(([^)]*)\), \(([^)]*)\)", re.M)
_REUSE = re.compile(r"^\s+(buf\w+) = (buf\w+); del \2\s+# reuse", re.M)
_REUSE_AS = re.compile(r"^\s+(buf\w+) = reinterpret_tensor\((buf\w+), \(([^)]*)\), \(([^)]*)\), \d+\)(?:; del \2)?\s+"
                       r"# (?:reuse|alias)", re.M)
_KERNEL_DEF = re.compile(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding\(\[([^\]]*)\]", re.M)
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "bool": 1,
             "complex64": 8}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.replace(" ", "").split(",") if x)


@dataclass
class Buffer:
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return prod(self.size) * _ITEMSIZE.get(self.dtype, 4)


@dataclass
class KernelCall:
    kernel: str
    reads: list[str] = field(default_factory=list)  # buffers and graph inputs (a slice: its base buffer)
    writes: list[str] = field(default_factory=list)


@dataclass
class Program:
    code: str
    buffers: dict[str, Buffer] = field(default_factory=dict)  # allocations and graph inputs
    calls: list[KernelCall] = field(default_factory=list)
    extern_lines: list[str] = field(default_factory=list)  # the calls of ATen kernels, as written

    def writes_of(self, name: str) -> list[KernelCall]:
        return [c for c in self.calls if name in c.writes]

    def copies_of(self, source: str) -> list[tuple[KernelCall, str]]:
        """The generated kernels that read ``source`` and the buffers they write."""
        return [(c, w) for c in self.calls if source in c.reads for w in c.writes]


def parse(code: str) -> Program:
    """The wrapper code's buffers (with reuse followed), generated kernel calls (inputs are the kernel's
    ``const`` pointer arguments, outputs the others) and ATen kernel calls."""
    out = Program(code)
    for name, size, stride in _INPUT.findall(code):
        out.buffers[name] = Buffer(_ints(size), _ints(stride), "float32")
    for name, size, stride, dtype in _ALLOC.findall(code):
        out.buffers[name] = Buffer(_ints(size), _ints(stride), dtype)
    for new, old in _REUSE.findall(code):
        if old in out.buffers:
            out.buffers[new] = out.buffers[old]
    for new, old, size, stride in _REUSE_AS.findall(code):  # another buffer's memory seen as this shape (a cat's slice)
        out.buffers[new] = Buffer(_ints(size), _ints(stride), out.buffers[old].dtype if old in out.buffers else "float32")
    signatures = {name: [t.strip().strip("'\"") for t in types.split(",")] for name, types in _KERNEL_DEF.findall(code)}
    body = code[code.index("def call(self, args):"):] if "def call(self, args):" in code else code
    for line in body.splitlines():
        m = re.match(r"^\s+(cpp_fused_\w+)\((.*)\)\s*$", line)
        if m and m.group(1) in signatures:
            args = _split_args(m.group(2))
            call = KernelCall(m.group(1))
            for arg, kind in zip(args, signatures[m.group(1)]):
                base = re.match(r"(?:reinterpret_tensor\()?(\w+)", arg)
                if base is None or not kind.endswith("*"):
                    continue
                (call.reads if kind.startswith("const") else call.writes).append(base.group(1))
            out.calls.append(call)
        elif "extern_kernels." in line or "torch.ops." in line:
            out.extern_lines.append(line.strip())
    return out


def _split_args(text: str) -> list[str]:
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


def channels_last(size: tuple[int, ...]) -> tuple[int, ...]:
    """The channels_last strides of a 4-D size."""
    n, c, h, w = size
    return (h * w * c, 1, w * c, c)
