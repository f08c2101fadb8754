"""Read the output code Inductor writes for one graph (CPU, Python wrapper + C++ kernels): which kernels
``call()`` runs, in order, which buffers each one writes, their sizes, and which of those writes only move
data.

This reads the program that runs, not Inductor's scheduler: the compiled-program oracle
(``fxlint.runtime.compiled_audit``) must be able to disagree with the verdicts ``fxlint.compiled`` reads from
the lowering.

* **Calls** (``parse``): each statement of ``call()`` that runs a kernel, in order: a generated C++ kernel
  (``cpp_fused_xxx_0(arg0_1, buf0)``), an extern kernel (``extern_kernels.bmm(..., out=buf1)``) or an ATen
  op the wrapper calls (``torch.ops.aten.index.Tensor(...)``, a fallback), with the provenance handle
  Inductor writes before it (``# [Provenance debug handles] cpp_fused_xxx_0:3``, with
  ``trace.provenance_tracking_level=1``).
* **Layouts**: every name's size and dtype, from ``empty_strided_cpu(size, stride, dtype)``, a reuse
  (``buf4 = buf3``), a view (``reinterpret_tensor(buf6, size, stride, offset)``) or
  ``assert_size_stride(name, size, stride)``; the bytes a kernel writes into an argument are that
  argument's elements times the item size of the C++ pointer it is passed as.
* **Copies** (``classify_kernel``): a generated kernel's arguments it stores into (``out_ptrN``,
  ``in_out_ptrN``) are each classified by what the C++ stores there: ``data`` (values loaded from memory,
  unchanged: a load, a dtype conversion, a broadcast, a select between loads and constants on an index
  condition, as a permute, a gather with a constant index, a pad or a cat make them), ``computed``
  (arithmetic on loaded values, a reduction), ``const`` (a fill), or ``unknown`` (code this reader does not
  follow). Only ``data`` is a copy.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import NamedTuple

DATA, CONST, INDEX, COMPUTED, UNKNOWN = "data", "const", "index", "computed", "unknown"

#: C++ pointer types -> item size
_ITEMSIZE = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "at::Half": 2, "at::BFloat16": 2, "c10::Half": 2,
             "c10::BFloat16": 2, "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1, "bool": 1,
             "uint16_t": 2, "uint32_t": 4, "uint64_t": 8, "at::Float8_e4m3fn": 1, "at::Float8_e5m2": 1,
             "c10::complex<float>": 8, "c10::complex<double>": 16}
_DTYPE_SIZE = {"float32": 4, "float": 4, "float64": 8, "double": 8, "float16": 2, "half": 2, "bfloat16": 2,
               "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
               "complex64": 8, "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}


@dataclass
class Layout:
    size: tuple[int, ...]
    itemsize: int | None = None
    base: tuple[int, ...] | None = None  # an alias's (a cat input's slice) buffer's size
    stride: tuple[int, ...] | None = None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.size:
            n *= s
        return n


class Write(NamedTuple):
    """What one kernel call stores into one of its arguments."""

    arg: str  # the argument, as written (buf9, reinterpret_tensor(buf4, ...))
    bytes: int | None  # its elements times the item size of the C++ pointer it is passed as
    what: str  # DATA / CONST / INDEX / COMPUTED / UNKNOWN
    size: tuple[int, ...] | None
    base: tuple[int, ...] | None  # for an alias, the size of the buffer it is a part of
    stride: tuple[int, ...] | None = None  # its strides, where the output code says them
    #: for a DATA store: the arguments it loads the stored values from (buf3, in_out_ptr's buffer), as written
    sources: tuple[str, ...] = ()
    #: their element counts, where the output code says them (None where it does not)
    source_numels: tuple[int | None, ...] = ()


@dataclass
class Kernel:
    """A generated C++ kernel: its profiler name, its parameters and what it stores into each."""

    name: str  # the Python name in the output code (cpp_fused_clone_permute_0)
    event: str | None  # the profiler event it records (graph_0_cpp_fused_clone_permute_0), None if it records none
    params: list[tuple[str, str]]  # (C++ type, name), in call order
    stores: dict[str, str]  # parameter name -> DATA / CONST / INDEX / COMPUTED / UNKNOWN
    #: parameter name -> the pointer parameters its DATA stores load from (where the reader followed them)
    loads: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass
class Call:
    """One kernel call of ``call()``."""

    index: int  # position among the calls
    kind: str  # "generated" | "extern" | "aten"
    name: str  # the kernel (cpp_fused_xxx_0), the extern kernel (extern_kernels.bmm) or the op (aten.index)
    handle: str | None  # "cpp_fused_xxx_0:3": the key of Inductor's provenance tables
    args: list[str]  # argument expressions, as written
    writes: list[Write] = field(default_factory=list)  # one per pointer the kernel stores into
    out: str | None = None  # the buffer it returns into (``buf4 = extern_kernels.convolution(...)``, ``out=buf4``)


@dataclass
class OutputCode:
    kernels: dict[str, Kernel]
    calls: list[Call]
    triton: bool = False  # kernels this reader does not read (a GPU's)


# ------------------------------------------------------------------------------------------ the wrapper

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\((\[.*?\]), r'''(.*?)'''\)", re.S | re.M)
_RECORD = re.compile(r'RAIIAtenRecordFunctionHandle\s+\w+\("([^"]+)"')
_SIGNATURE = re.compile(r'extern "C"\s+void\s+kernel\((.*?)\)\s*\{', re.S)
_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+)")
_ASSIGN = re.compile(r"^(\w+)\s*=\s*(.*)$")
#: an extern kernel's ``out=`` argument (a buffer, or a view of one: ``out=reinterpret_tensor(buf3, ...)``)
_OUT = re.compile(r"^out\s*=\s*(?:reinterpret_tensor\()?(\w+)")


def parse(code: str) -> OutputCode:
    """The kernels and the calls of one output code (``ValueError`` when there is no ``call()``)."""
    kernels: dict[str, Kernel] = {}
    for m in _KERNEL_DEF.finditer(code):
        kernels[m.group(1)] = _kernel(m.group(1), m.group(3))
    body = _call_body(code)
    if body is None:
        raise ValueError("no call() in the output code")
    layouts: dict[str, Layout] = {}
    calls: list[Call] = []
    handle: str | None = None
    for raw in body:
        line = raw.strip()
        h = _HANDLE.match(line)
        if h:
            handle = h.group(1)
            continue
        if not line or line.startswith("#"):
            continue
        stmt = line.split("  #", 1)[0].split("; del ", 1)[0].strip()
        call = _kernel_call(stmt, kernels, layouts, len(calls), handle)
        if call is not None:
            calls.append(call)
            handle = None
        _track_layout(stmt, layouts)
        alias = re.match(r"^(\w+) = reinterpret_tensor\((\w+),", stmt)
        if alias and "# alias" in line and alias.group(1) in layouts and alias.group(2) in layouts:
            layouts[alias.group(1)].base = layouts[alias.group(2)].size
    triton = "async_compile.triton(" in code
    return OutputCode(kernels=kernels, calls=calls, triton=triton)


def _call_body(code: str) -> list[str] | None:
    lines = code.splitlines()
    for i, ln in enumerate(lines):
        if re.match(r"^\s*def call\(self, args\):", ln) or re.match(r"^def call\(args\):", ln):
            indent = len(ln) - len(ln.lstrip())
            out = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                out.append(nxt)
            return out
    return None


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated pieces of ``text`` (brackets respected)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _call_parts(expr: str) -> tuple[str, list[str]] | None:
    """``f(a, b)`` -> ("f", ["a", "b"]) when the whole expression is one call."""
    m = re.match(r"^([\w.]+)\((.*)\)$", expr.strip(), re.S)
    if not m:
        return None
    inner = m.group(2)
    depth = 0
    for ch in inner:  # the parentheses must match: `f(a)(b)` or `f(a) + g(b)` is not one call
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return None
    return m.group(1), _split_args(inner)


def _dtype_size(text: str) -> int | None:
    return _DTYPE_SIZE.get(text.strip().removeprefix("torch."))


def _layout_of(expr: str, layouts: dict[str, Layout]) -> Layout | None:
    expr = expr.strip()
    if expr in layouts:
        return layouts[expr]
    parts = _call_parts(expr)
    if parts is None:
        return None
    fn, args = parts
    if fn == "reinterpret_tensor" and len(args) >= 2:
        size = _literal(args[1])
        base = _layout_of(args[0], layouts)
        if isinstance(size, tuple) and all(isinstance(s, int) for s in size):
            return Layout(tuple(size), base.itemsize if base else None,
                          stride=_ints(args[2]) if len(args) >= 3 else None)
    if fn.startswith("empty_strided") and len(args) >= 3:
        size = _literal(args[0])
        if isinstance(size, tuple) and all(isinstance(s, int) for s in size):
            return Layout(tuple(size), _dtype_size(args[2]), stride=_ints(args[1]))
    return None


def _ints(text: str) -> tuple[int, ...] | None:
    """A literal tuple of ints (a size or strides), None when it is not one."""
    value = _literal(text)
    return tuple(value) if isinstance(value, tuple) and all(isinstance(s, int) for s in value) else None


def _track_layout(stmt: str, layouts: dict[str, Layout]) -> None:
    parts = _call_parts(stmt)
    if parts is not None and parts[0] == "assert_size_stride" and len(parts[1]) >= 2:
        name, size = parts[1][0], _literal(parts[1][1])
        if isinstance(size, tuple) and all(isinstance(s, int) for s in size):
            old = layouts.get(name)
            layouts[name] = Layout(tuple(size), old.itemsize if old else None,
                                   stride=_ints(parts[1][2]) if len(parts[1]) >= 3 else None)
        return
    m = _ASSIGN.match(stmt)
    if m:
        got = _layout_of(m.group(2), layouts)
        if got is not None:
            layouts[m.group(1)] = got


def _kernel_call(stmt: str, kernels: dict[str, Kernel], layouts: dict[str, Layout], index: int,
                 handle: str | None) -> Call | None:
    m = _ASSIGN.match(stmt)
    rhs = m.group(2) if m else stmt
    parts = _call_parts(rhs)
    if parts is None:
        return None
    fn, args = parts
    if fn in kernels:
        k = kernels[fn]
        call = Call(index, "generated", fn, handle, args)
        by_param = {p: a for (_, p), a in zip(k.params, args)}
        for (ctype, pname), arg in zip(k.params, args):
            what = k.stores.get(pname)
            if what is None:
                continue
            lay = _layout_of(arg, layouts)
            item = _ITEMSIZE.get(ctype.replace("const", "").replace("*", "").strip())
            nbytes = lay.numel * item if lay is not None and item is not None else None
            sources = tuple(by_param[q] for q in sorted(k.loads.get(pname, ())) if q in by_param)
            numels = tuple(getattr(_layout_of(a, layouts), "numel", None) for a in sources)
            call.writes.append(Write(arg, nbytes, what, lay.size if lay is not None else None,
                                     lay.base if lay is not None else None, lay.stride if lay is not None else None,
                                     sources, numels))
        return call
    outs = (_OUT.match(a) for a in args)
    out = m.group(1) if m else next((o.group(1) for o in outs if o is not None), None)
    if fn.startswith("extern_kernels."):
        return Call(index, "extern", fn, handle, args, out=out)
    if fn.startswith("torch.ops."):
        return Call(index, "aten", fn.removeprefix("torch.ops."), handle, args, out=out)
    return None


# ------------------------------------------------------------------------------------------ the kernels


def _kernel(name: str, source: str) -> Kernel:
    rec = _RECORD.search(source)
    sig = _SIGNATURE.search(source)
    params: list[tuple[str, str]] = []
    if sig:
        for p in _split_args(sig.group(1)):
            bits = p.strip().rsplit(None, 1)
            if len(bits) == 2:
                params.append((bits[0].strip(), bits[1].strip()))
    body = source[sig.end():] if sig else source
    try:
        stores, loads = _walk(body)
    except Exception:  # noqa: BLE001 - code this reader does not follow: every store unknown
        stores, loads = {p: UNKNOWN for _, p in params if "out_ptr" in p}, {}
    return Kernel(name=name, event=rec.group(1) if rec else None, params=params, stores=stores, loads=loads)


def _strip_templates(text: str) -> str:
    """``at::vec::Vectorized<float>::loadu(`` -> ``at::vec::Vectorized::loadu(``: template arguments go
    (only those followed by ``(``, ``::`` or ``{``, so no comparison is taken for one)."""
    pat = re.compile(r"(\b[A-Za-z_][\w:]*)\s*<([^<>;{}]*)>(?=\s*(?:\(|::|\{))")
    while True:
        new = pat.sub(r"\1", text)
        if new == text:
            return new
        text = new


_STMT_AUTO = re.compile(r"^\s*(?:auto|[\w:]+)\s+(tmp\w*)\s*=\s*(.*)$", re.S)
_STMT_ARRAY = re.compile(r"^\s*(?:alignas\(.*?\)\s*)?[\w:]+\s+(tmp\w*)\s*\[[^\]]*\]\s*$", re.S)
_STMT_STD_ARRAY = re.compile(r"^\s*(?:__at_align__\s+)?std::array\s*<[^>]*>\s+(tmp\w*)\s*$", re.S)
_STMT_SET = re.compile(r"^\s*(tmp\w*)\s*=\s*(.*)$", re.S)
_STMT_INDEXED_STORE = re.compile(r"^\s*((?:in_)?out_ptr\d+|tmp\w*|local_buffer\w*)\s*\[(.*)\]\s*=\s*(.*)$", re.S)
_STMT_METHOD_STORE = re.compile(r"^\s*(.+?)\.store\(\s*((?:in_)?out_ptr\d+|tmp\w*|local_buffer\w*)\b(.*)\)\s*$",
                                re.S)
_STMT_TRANSPOSE = re.compile(r"^\s*(?:at::vec::)?transpose_mxn\s*\((.*)\)\s*$", re.S)
_PTR = re.compile(r"^(?:in_ptr\d+|in_out_ptr\d+|out_ptr\d+)$")
_CASTS = {"static_cast", "c10::convert", "at::vec::convert", "float", "double", "int64_t", "int32_t", "bool",
          "at::vec::Vectorized", "at::vec::VectorizedN", "c10::Half", "c10::BFloat16", "at::Half", "at::BFloat16",
          "half", "bfloat16", "uint8_t", "int8_t", "at::vec::VecMask", "decltype"}
_LOADS = ("loadu", "load", "from")
_ACC = "tmp_acc"
_LOCAL = "local_buffer"


def _statements(body: str) -> list[str]:
    """The body's statements, in order, comments out; a lambda (``[&] { ... }``) is one statement whose
    inner statements come first (they define its locals)."""
    text = re.sub(r"//[^\n]*", "", body)
    text = re.sub(r"#pragma[^\n]*", "", text)
    out: list[str] = []
    cur: list[str] = []
    depth = 0  # parentheses / brackets: a `;` inside them is not the end of a statement (for(;;))
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if depth == 0 and ch in "{}":
            stmt = "".join(cur).strip()
            if ch == "{" and stmt.endswith("[&]"):
                # a lambda: its body's statements, then `auto tmpN = LAMBDA(return expr);`
                end = _matching(text, i)
                inner = text[i + 1:end]
                out.extend(_statements(inner))
                # every value it may return (a masked load: the load, or the fill when the mask is empty)
                rets = re.findall(r"return\s+([^;]*);", re.sub(r"//[^\n]*", "", inner))
                cur = list(stmt[:-3] + f"__lambda__({', '.join(rets)})")
                i = end + 1
                called = re.match(r"\s*\(\s*\)", text[i:])  # invoked where it is defined: `[&] {...}()`
                if called:
                    i += called.end()
                continue
            if stmt:
                out.append(stmt)
            cur = []
        elif depth == 0 and ch == ";":
            stmt = "".join(cur).strip()
            if stmt:
                out.append(stmt)
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _matching(text: str, i: int) -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def classify_kernel(body: str) -> dict[str, str]:
    """What a kernel body stores into each pointer it writes: DATA, CONST, INDEX, COMPUTED or UNKNOWN (the
    worst over its stores: one computed store makes the pointer's contents computed)."""
    return _walk(body)[0]


def kernel_loads(body: str) -> dict[str, frozenset[str]]:
    """For each pointer a kernel body stores DATA into: the pointer parameters those values are loaded from
    (``{"out_ptr8": {"in_out_ptr0"}}``: a value the kernel stored, copied into another buffer)."""
    return _walk(body)[1]


#: a pointer parameter of a generated kernel, where an expression names it
_PTR_NAME = re.compile(r"\b(?:in_ptr\d+|in_out_ptr\d+|out_ptr\d+)\b")
_NAME = re.compile(r"\b[A-Za-z_]\w*")


def _walk(body: str) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """``classify_kernel``'s kinds, and ``kernel_loads``'s pointers, in one reading of the body."""
    env: dict[str, str] = {}
    stores: dict[str, str] = {}
    arrays: set[str] = set()
    src: dict[str, set[str]] = {}  # tmp / local array -> the pointers its value is loaded from
    loads: dict[str, set[str]] = {}

    def origin(expr: str) -> set[str]:  # the pointers, and the tmps' and local tiles' pointers, an expression reads
        found = set(_PTR_NAME.findall(expr))
        for t in _NAME.findall(expr):
            found |= src.get(t, set())
        return found

    def stored(dst: str, expr: str) -> None:
        if dst in arrays or dst.startswith(_LOCAL):
            src.setdefault(dst, set()).update(origin(expr))
        elif "out_ptr" in dst:
            loads.setdefault(dst, set()).update(origin(expr))

    for stmt in _statements(_strip_templates(body)):
        stmt = stmt.strip()
        if stmt.startswith(("for(", "for (", "if(", "if (", "else", "return", "#")):
            continue
        m = _STMT_ARRAY.match(stmt) or _STMT_STD_ARRAY.match(stmt)
        if m:
            arrays.add(m.group(1))  # a local array (a tile), filled below
            env.pop(m.group(1), None)
            continue
        m = _STMT_TRANSPOSE.match(stmt)
        if m:
            args = _split_args(m.group(1))
            if len(args) >= 3:
                what, dst = _kind_of_pointer(args[0], env), _base(args[2])
                if dst is not None:
                    _store(dst, what, stores, env, arrays)
                    stored(dst, args[0])
            continue
        m = _STMT_INDEXED_STORE.match(stmt)
        if m:
            _store(m.group(1), kind(m.group(3), env), stores, env, arrays)
            stored(m.group(1), m.group(3))
            continue
        m = _STMT_METHOD_STORE.match(stmt)
        if m:
            _store(m.group(2), kind(m.group(1), env), stores, env, arrays)
            stored(m.group(2), m.group(1))
            continue
        m = _STMT_AUTO.match(stmt) or _STMT_SET.match(stmt)
        if m:
            name, rhs = m.group(1), m.group(2)
            src[name] = origin(rhs) | (src.get(name, set()) if _STMT_SET.match(stmt) else set())
            new = kind(rhs, env)
            if _STMT_SET.match(stmt) and name in env and not _STMT_AUTO.match(stmt):
                # an accumulator updated (tmp_acc0 = tmp_acc0 + tmp0): a reduction, computed
                new = _worst(new, COMPUTED) if re.search(rf"\b{re.escape(name)}\b", rhs) else new
            env[name] = new
            continue
    return stores, {p: frozenset(loads.get(p, ())) for p, what in stores.items() if what == DATA}


def _store(dst: str, what: str, stores: dict[str, str], env: dict[str, str], arrays: set[str]) -> None:
    """A store of a value of kind ``what`` into ``dst``: a pointer the kernel writes, or a local tile."""
    if "out_ptr" in dst:
        stores[dst] = _worst(stores.get(dst), what)
    elif dst.startswith(_ACC):
        pass  # a reduction's per-thread partials
    elif dst in arrays or dst.startswith(_LOCAL):
        env[dst] = _worst(env.get(dst), what)  # a tile, or a kernel-local buffer (softmax's exponentials)
    else:
        stores.setdefault("?", UNKNOWN)


_ORDER = {CONST: 0, DATA: 1, INDEX: 2, COMPUTED: 3, UNKNOWN: 4}


def _worst(a: str | None, b: str) -> str:
    if a is None:
        return b
    if {a, b} == {DATA, CONST}:
        return DATA  # a pad: some elements loaded, some filled
    return a if _ORDER[a] >= _ORDER[b] else b


def _base(expr: str) -> str | None:
    m = re.match(r"^\s*(\w+)", expr)
    return m.group(1) if m else None


def _kind_of_pointer(expr: str, env: dict[str, str]) -> str:
    """The kind of the values a pointer expression (``in_ptr0 + 16L*x0``, a local array) reads."""
    base = _base(expr)
    if base is None:
        return UNKNOWN
    if _PTR.match(base):
        return DATA
    return env.get(base, UNKNOWN)


def _strip_parens(expr: str) -> str:
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and _matching_paren(expr, 0) == len(expr) - 1:
        expr = expr[1:-1].strip()
    return expr


def _matching_paren(text: str, i: int) -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([":
            depth += 1
        elif text[j] in ")]":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _ternary(expr: str) -> tuple[str, str, str] | None:
    depth, q = 0, -1
    for i, ch in enumerate(expr):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?" and q < 0:
            q = i
        elif depth == 0 and ch == ":" and q >= 0:
            if expr[i - 1:i + 1] == "::" or expr[i:i + 2] == "::":
                continue
            # the matching `:` of the first `?` (nested ternaries nest in the else branch)
            nested = expr[q + 1:i].count("?") - _colons(expr[q + 1:i])
            if nested == 0:
                return expr[:q], expr[q + 1:i], expr[i + 1:]
    return None


def _colons(text: str) -> int:
    return len(re.findall(r"(?<!:):(?!:)", text))


def _select(cond: str, a: str, b: str, env: dict[str, str]) -> str:
    kc = kind(cond, env)
    if kc == UNKNOWN:
        return UNKNOWN
    if kc in (DATA, COMPUTED):
        return COMPUTED  # a select on the values themselves (a where on data): computation
    ka, kb = kind(a, env), kind(b, env)
    return _join(ka, kb)


def _join(ka: str, kb: str) -> str:
    pair = {ka, kb}
    if UNKNOWN in pair:
        return UNKNOWN
    if COMPUTED in pair:
        return COMPUTED
    if DATA in pair:
        return DATA if pair <= {DATA, CONST} else COMPUTED
    return INDEX if INDEX in pair else CONST


def kind(expr: str, env: dict[str, str]) -> str:
    """The kind of a C++ expression of a generated kernel, given the kinds of the ``tmp`` names defined
    before it."""
    expr = _strip_parens(expr)
    if not expr:
        return UNKNOWN
    t = _ternary(expr)
    if t is not None:
        return _select(*t, env)
    if expr.startswith(_ACC):
        return COMPUTED  # a reduction's accumulator (tmp_acc0, tmp_acc0_vec, tmp_acc0_arr[tid])
    if re.fullmatch(r"tmp\w*", expr):
        return env.get(expr, UNKNOWN)
    if re.fullmatch(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+)[fFlLuU]*|true|false|nullptr", expr) \
            or expr in ("std::numeric_limits::infinity()", "-std::numeric_limits::infinity()"):
        return CONST
    if re.fullmatch(r"(?:x\d+\w*|ks\d+|tid|\w+_inner|\w+_tail)", expr):
        return INDEX
    m = re.fullmatch(r"(\w+)\s*\[(.*)\]", expr, re.S)
    if m and _matching_paren(expr, expr.index("[")) == len(expr) - 1:
        if m.group(1).startswith(_LOCAL):
            return env.get(m.group(1), UNKNOWN)
        return DATA if _PTR.match(m.group(1)) else env.get(m.group(1), UNKNOWN)
    m = re.fullmatch(r"(tmp\w*)\s*\(\s*\)", expr)  # a lambda called
    if m:
        return env.get(m.group(1), UNKNOWN)
    m = re.fullmatch(r"(tmp\w*)\s*\.\s*template\s+cast\s*\(\s*\)", expr) or \
        re.fullmatch(r"(tmp\w*)\s*\.\s*cast\s*\(\s*\)", expr)
    if m:
        return env.get(m.group(1), UNKNOWN)
    m = re.search(r"\.\s*(?:template\s+)?loadu\s*\(", expr)
    if m and _matching_paren(expr, m.end() - 1) == len(expr) - 1 and _is_mask(expr[:m.start()], env):
        # a masked load through the mask: tmp9.template cast<float,1>().template loadu<float,1>(ptr + i),
        # at::vec::VecMask<float,1>::from(tmp12).template loadu<float,1>(ptr + i)
        close = _matching_paren(expr, m.end() - 1)
        if close == len(expr) - 1:
            return _kind_of_pointer(_split_args(expr[m.end():close])[0], env)
    m = re.fullmatch(r"(tmp\w*)\s*\.\s*(?:template\s+)?(\w+)\s*\((.*)\)", expr, re.S)
    if m and _matching_paren(expr, expr.index("(", m.start(3) - 1)) == len(expr) - 1:
        # a method of a value: a conversion keeps its kind, anything else (erf, exp, neg) computes
        base = env.get(m.group(1), UNKNOWN)
        if m.group(2) in ("cast", "template_cast"):
            return base
        return _arith([base, *(kind(a, env) for a in _split_args(m.group(3)))])
    call = _call(expr)
    if call is not None:
        fn, args = call
        last = fn.rsplit("::", 1)[-1]
        if fn == "__lambda__":
            if not args:
                return UNKNOWN
            got = kind(args[0], env)
            for a in args[1:]:
                got = _join(got, kind(a, env))
            return got
        if last in _LOADS and args:
            return _kind_of_pointer(args[0], env)
        if last == "blendv" and len(args) == 3:  # blendv(a, b, mask): mask ? b : a
            return _select(args[2], args[1], args[0], env)
        if (fn in _CASTS or fn.startswith("decltype(")) and len(args) == 1:
            return kind(args[0], env)
        if last == "arange":
            return INDEX
        kinds = [kind(a, env) for a in args]
        return _arith(kinds)
    # an operator expression: the kinds of its operands
    operands = _operands(expr)
    if not operands or operands == [expr]:
        return UNKNOWN  # nothing this reader can split further
    return _arith([_operand_kind(tok, env) for tok in operands])


def _is_mask(expr: str, env: dict[str, str]) -> bool:
    """Is ``expr`` (what a ``.loadu(...)`` is called on) a mask made from the index alone?"""
    names = re.findall(r"\btmp\w*", expr)
    if not names or re.search(r"[-+*/%]", expr.replace("->", "")):
        return False
    return all(env.get(n) in (INDEX, CONST) for n in names)


def _arith(kinds: list[str]) -> str:
    if UNKNOWN in kinds:
        return UNKNOWN
    if DATA in kinds or COMPUTED in kinds:
        return COMPUTED
    return INDEX if INDEX in kinds else CONST


def _call(expr: str) -> tuple[str, list[str]] | None:
    m = re.match(r"^(decltype\(.*?\)(?:::\w+)*|[A-Za-z_][\w:]*)\s*\(", expr, re.S)
    if not m:
        return None
    start = m.end() - 1
    if _matching_paren(expr, start) != len(expr) - 1:
        return None
    return m.group(1).strip(), _split_args(expr[start + 1:-1])


def _operands(expr: str) -> list[str]:
    """The operands of an operator expression at the top level: names, loads, calls, literals."""
    out, i = [], 0
    while i < len(expr):
        ch = expr[i]
        if ch.isspace() or ch in "+-*/%<>=!&|^~,?:":
            i += 1
            continue
        if ch == "(":
            j = _matching_paren(expr, i)
            if j < 0:
                return [UNKNOWN]
            out.append(expr[i:j + 1])
            i = j + 1
            continue
        m = re.match(r"(decltype\(.*?\)(?:::\w+)*|[A-Za-z_][\w:.]*|\d[\w.]*)", expr[i:])
        if not m:
            return [UNKNOWN]
        j = i + m.end()
        while j < len(expr) and expr[j] in "([":
            k = _matching_paren(expr, j)
            if k < 0:
                return [UNKNOWN]
            j = k + 1
        out.append(expr[i:j])
        i = j
    return out


def _operand_kind(tok: str, env: dict[str, str]) -> str:
    if tok == UNKNOWN:
        return UNKNOWN
    return kind(tok, env)
