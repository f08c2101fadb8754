"""Where a node came from in the user's source, and inline suppressions.

Stack traces on FX nodes (``node.meta["stack_trace"]``) list frames outermost
first; the user's line is the innermost frame that is not inside torch or
fxlint (``self.lin(x)`` rather than ``torch/nn/modules/linear.py``).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import linecache
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)')
_SUPPRESS_RE = re.compile(r"#\s*fxlint:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_FXLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the fxlint package


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    function: str
    code: str | None = None
    #: the frames inside this line, outermost first ("einops/einops.py:600 in rearrange"): the
    #: pass-through library and torch code between the user's line and the op
    via: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


#: top-level packages whose functions pass the user's tensors on to torch (``einops.rearrange``
#: is reshapes and permutes): a copy made inside them is the calling line's, the line the user can
#: change. ``passthrough = [...]`` in ``[tool.fxlint]`` replaces the list.
DEFAULT_PASSTHROUGH: tuple[str, ...] = ("einops",)
_passthrough: tuple[str, ...] = DEFAULT_PASSTHROUGH


@functools.lru_cache(maxsize=64)
def _package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    """The directories of the packages ``names`` (``pkg`` or ``pkg.sub``), found without importing them."""
    import importlib.util

    dirs = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        for loc in spec.submodule_search_locations or ([spec.origin] if spec.origin else []):
            d = os.path.abspath(loc)
            dirs.append(d + os.sep if os.path.isdir(d) else d)
    return tuple(dirs)


#: the namespaces whose functions a library may replace with its own (PyG assigns ``torch.index_select``)
_PATCHABLE = ("torch", "torch.nn.functional", "torch.Tensor", "torch.linalg", "torch.fft", "torch.special")


def _patched_torch_functions() -> dict[tuple[str, str], tuple[str, str]]:
    """``(file, function name)`` -> ``(namespace, attribute)`` of the Python functions a library installed in
    place of a torch function (``torch.index_select = _new_index_select``): a call the user wrote as
    ``torch.index_select(...)`` runs them, and the op inside is the user's line, as a pass-through library's.
    Read from the live namespaces (a library patches torch when it is imported), cached until a module is
    imported (the number of modules and the last one imported tell)."""
    import sys

    mods = sys.modules
    return _patched_cached(len(mods), id(next(reversed(mods.values()), None)))


@functools.lru_cache(maxsize=1)
def _patched_cached(_n_modules: int, _last: int) -> dict[tuple[str, str], tuple[str, str]]:
    import inspect
    import sys

    found: dict[tuple[str, str], tuple[str, str]] = {}
    for ns_name in _PATCHABLE:
        ns = sys.modules.get(ns_name) if ns_name != "torch.Tensor" else torch.Tensor
        if ns is None:
            continue
        for attr, value in list(vars(ns).items()):
            if attr.startswith("_") and not attr.startswith("__"):
                continue  # torch's private helpers (``torch._overload`` is typing's)
            try:
                fn = inspect.unwrap(value) if callable(value) else None
            except ValueError:  # a wrapper chain that loops
                continue
            # a replacement may call an earlier one (two libraries patched the same function): follow the
            # functions it calls that carry the torch function's name (``_old_index_select``)
            todo, seen = [fn], set()
            while todo:
                f = todo.pop()
                code = getattr(f, "__code__", None)
                if code is None or id(f) in seen or code.co_filename.startswith("<"):
                    continue
                seen.add(id(f))
                path = os.path.abspath(code.co_filename)
                if path.startswith(_TORCH_DIR) or path.startswith(_FXLINT_DIR):
                    continue
                found[(path, code.co_name)] = (ns_name, attr)
                glb = getattr(f, "__globals__", {})
                cells = getattr(f, "__closure__", None) or ()
                called = [glb.get(n) for n in code.co_names] + [c.cell_contents for c in cells if _cell_set(c)]
                todo.extend(c for c in called if callable(c) and attr in getattr(c, "__name__", ""))
    return found


def _cell_set(cell: object) -> bool:
    try:
        _ = cell.cell_contents  # type: ignore[attr-defined]
    except ValueError:  # an empty cell
        return False
    return True


def patched_torch_name(fn: object) -> tuple[str, str] | None:
    """``("torch", "index_select")`` when ``fn`` is a library's replacement of that torch function, else None."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename.startswith("<"):
        return None
    return _patched_torch_functions().get((os.path.abspath(code.co_filename), code.co_name))


def is_patched_torch_code(path: str, function: str) -> bool:
    """The function ``function`` of ``path`` is a library's replacement of a torch function."""
    return (os.path.abspath(path), function) in _patched_torch_functions()


def is_passthrough_file(path: str) -> bool:
    """A file of a pass-through helper library (``DEFAULT_PASSTHROUGH``, or the project's list)."""
    if not path or path.startswith("<") or not _passthrough:
        return False
    p = os.path.abspath(path)
    return any(p == d or p.startswith(d) for d in _package_dirs(_passthrough))


@contextlib.contextmanager
def passthrough_libraries(names: tuple[str, ...] | list[str] | None) -> Iterator[None]:
    """Attribute through the packages ``names`` while the block runs (None: the default list)."""
    global _passthrough
    saved = _passthrough
    _passthrough = tuple(names) if names is not None else DEFAULT_PASSTHROUGH
    try:
        yield
    finally:
        _passthrough = saved


#: frames of a ``via`` chain that say nothing about where the op is (module-call and override plumbing)
_PLUMBING = ("torch/overrides.py", "torch/utils/_", "torch/nn/modules/module.py", "torch/_dynamo/",
             "torch/_compile.py")


def via_chain(texts: Iterator[str] | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``frame_text`` lines less the plumbing (``nn.Module.__call__``, torch-function overrides)."""
    return tuple(t for t in texts if not t.startswith(_PLUMBING))


def frame_text(loc: Location) -> str:
    """``einops/einops.py:600 in rearrange``: a frame of a ``via`` chain (site-packages left out)."""
    path = loc.file
    marker = os.sep + "site-packages" + os.sep
    if marker in path:
        path = path.split(marker, 1)[1]
    elif os.path.abspath(path).startswith(_TORCH_DIR):
        path = "torch" + os.sep + os.path.abspath(path)[len(_TORCH_DIR):]
    return f"{path}:{loc.line} in {loc.function}"


def is_internal_file(path: str) -> bool:
    """True for frames the user did not write: torch, fxlint, generated code."""
    if not path:
        return True
    if path.startswith("<"):
        # generated code (FX's <eval_with_key>, <frozen ...>) is not the user's; <stdin>, <string>
        # and notebook cells are
        return path.startswith(("<eval_with_key>", "<frozen", "<fx_", "<torch_"))
    p = os.path.abspath(path)
    return p.startswith(_TORCH_DIR) or p.startswith(_FXLINT_DIR)


def parse_stack_trace(trace: str | None) -> list[Location]:
    """All frames of an FX stack-trace string, outermost first."""
    if not trace:
        return []
    frames: list[Location] = []
    lines = trace.splitlines()
    for i, text in enumerate(lines):
        m = _FRAME_RE.search(text)
        if not m:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME_RE.search(lines[i + 1]) else None
        frames.append(Location(m["file"], int(m["line"]), m["func"].strip(), code or None))
    return frames


def user_frame(trace: str | None) -> Location | None:
    """The innermost frame of ``trace`` outside torch, fxlint, the pass-through libraries and a library's
    replacement of a torch function (the line the user can change: the ``rearrange(...)`` call, not einops'
    ``reshape`` inside it; the ``torch.index_select(...)`` call, not PyG's wrapper torch.index_select has
    become), with the frames inside it as ``via``; when every frame outside torch is one of those, the
    innermost of them."""
    frames = parse_stack_trace(trace)
    fallback = None
    for i in range(len(frames) - 1, -1, -1):
        loc = frames[i]
        if is_internal_file(loc.file):
            continue
        if fallback is None:
            fallback = i
        if not is_passthrough_file(loc.file) and not is_patched_torch_code(loc.file, loc.function):
            return _with_via(frames, i)
    return _with_via(frames, fallback) if fallback is not None else None


def _with_via(frames: list[Location], i: int) -> Location:
    inner = via_chain([frame_text(f) for f in frames[i + 1:] if not os.path.abspath(f.file).startswith(_FXLINT_DIR)])
    return dataclasses.replace(frames[i], via=inner) if inner else frames[i]


_PATH_PATTERNS = [
    (re.compile(r"getattr\((.*?), '([^']*)'\)"), r"\1.\2"),
    # a module's table read through its __dict__ (transformers' Swin: `blocks[0].__dict__['_modules']['attention']`)
    (re.compile(r"\.__dict__\['_(?:modules|parameters|buffers)'\]\['([^']*)'\]"), r".\1"),
    (re.compile(r"\._(?:modules|parameters|buffers)\['([^']*)'\]"), r".\1"),
    (re.compile(r"\[(\d+)\]"), r".\1"),
    (re.compile(r"\['([^']*)'\]"), r".\1"),
]


def clean_path(raw: str | None, keep_root: bool = False) -> str | None:
    """Turn Dynamo's source names into the user's dotted module path.

    ``L['self'].encoder.layers[3].attn`` -> ``encoder.layers.3.attn``;
    ``L['self']._modules['lin']._parameters['weight']`` -> ``lin.weight``;
    ``G['lin']._parameters['weight']`` (a module in a global) -> ``lin.weight``;
    ``L['self'].blocks[0].__dict__['_modules']['attn']`` -> ``blocks.0.attn``;
    with ``keep_root`` the local's name stays: ``L['G']._modules['net']...``
    -> ``G.net...``.
    """
    if raw is None:
        return None
    s = str(raw)
    if keep_root:  # several models in one frame (`def step(G, D, z)`): their names tell them apart
        s = re.sub(r"^L\['([^']*)'\]", r"\1", s)
    s = re.sub(r"^L\['[^']*'\]", "", s)  # the compiled function's local (self, model, ...)
    s = re.sub(r"^G\['([^']*)'\]", r"\1", s)  # a module held in a global: its name is the path root
    s = re.sub(r"^L__self___?", "", s)
    for _ in range(3):  # nested getattr(...) spellings
        for pat, rep in _PATH_PATTERNS:
            s = pat.sub(rep, s)
    s = re.sub(r"^L\.[^.]*", "", s)  # L.self left over by getattr rewriting
    s = s.strip(".")
    return s or None


def module_path(meta: dict) -> str | None:
    """Dotted path of the innermost nn.Module that produced a node."""
    stack = meta.get("nn_module_stack")
    if not stack:
        return None
    path = list(stack.values())[-1][0]
    return clean_path(path)


# --------------------------------------------------------------------------- suppressions


@functools.lru_cache(maxsize=256)
def _statement_spans(path: str, mtime: float) -> list[tuple[int, int]]:
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For, ast.While, ast.If, ast.Try)
        ):
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def _statement_lines(path: str, line: int) -> range:
    """The lines of the simple statement that contains ``line`` (multi-line calls)."""
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return range(line, line + 1)
    best = (line, line)
    for lo, hi in _statement_spans(path, mtime):
        if lo <= line <= hi and (best == (line, line) or hi - lo < best[1] - best[0]):
            best = (lo, hi)
    return range(best[0], best[1] + 1)


def suppressed_codes(path: str | None, line: int | None) -> set[str] | None:
    """Codes silenced at ``path:line`` by ``# fxlint: ignore[...]``.

    Returns None when nothing is silenced, ``{"ALL"}`` for a bare
    ``# fxlint: ignore``. The comment may sit on any line of the statement.
    """
    if not path or line is None or is_internal_file(path):
        return None
    linecache.checkcache(path)  # the file may have changed since it was cached
    codes: set[str] = set()
    found = False
    for ln in _statement_lines(path, line):
        text = linecache.getline(path, ln)
        for m in _SUPPRESS_RE.finditer(text):
            found = True
            if m["codes"] is None:
                codes.add("ALL")
            else:
                codes.update(c.strip().upper() for c in m["codes"].split(",") if c.strip())
    return codes if found else None


def is_suppressed(code: str, path: str | None, line: int | None) -> bool:
    codes = suppressed_codes(path, line)
    if not codes:
        return False
    return "ALL" in codes or any(code.startswith(c) for c in codes)


def source_line(path: str | None, line: int | None) -> str | None:
    if not path or line is None:
        return None
    linecache.checkcache(path)
    text = linecache.getline(path, line).strip()
    return text or None


# --------------------------------------------------------------------------- grad-mode blocks

_GRAD_OFF_RE = re.compile(r"\b(no_grad|inference_mode|set_grad_enabled)\b")


@functools.lru_cache(maxsize=256)
def _grad_off_blocks(path: str, mtime: float) -> list[tuple[int, int, int]]:
    """(first line, last line, line of the `with`/decorator) of every block that turns
    autograd off in ``path``: ``with torch.no_grad():``, ``inference_mode``,
    ``set_grad_enabled(...)``, and functions decorated with them."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return []
    blocks = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if _GRAD_OFF_RE.search(ast.get_source_segment(text, item.context_expr) or ""):
                    blocks.append((node.lineno, node.end_lineno or node.lineno, node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                if _GRAD_OFF_RE.search(ast.get_source_segment(text, dec) or ""):
                    blocks.append((node.lineno, node.end_lineno or node.lineno, dec.lineno))
    return blocks


def grad_off_block_lines(path: str | None, line: int | None) -> list[int]:
    """Lines of the ``with torch.no_grad():`` (or ``inference_mode``,
    ``set_grad_enabled``, decorator) blocks that enclose ``path:line``, innermost first."""
    if not path or line is None or is_internal_file(path):
        return []
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return []
    found = [(lo, hi, at) for lo, hi, at in _grad_off_blocks(path, mtime) if lo <= line <= hi]
    return [at for lo, hi, at in sorted(found, key=lambda b: b[1] - b[0])]
# --------------------------------------------------------------------------- branches only torch.compile takes

#: functions that are True while Dynamo traces (``torch.compiler.is_compiling``, ``torch._dynamo.is_compiling``,
#: transformers' ``is_torchdynamo_compiling``, ``torch.compiler.is_exporting``...) and False in eager
_COMPILING_FUNCS = frozenset({"is_compiling", "is_torchdynamo_compiling", "is_dynamo_compiling", "is_exporting",
                              "is_torchdynamo_exporting", "_is_compiling"})
#: predicates that are False in an eager (not TorchScript) program and while Dynamo traces
_EAGER_FALSE_FUNCS = frozenset({"is_scripting", "is_tracing"})


@dataclass(frozen=True)
class CompilerBranch:
    """A branch of an ``if`` that the program takes only while ``torch.compile`` traces it: eager runs
    the other branch (or skips the block)."""

    file: str
    line: int  # the ``if`` (or ``elif``)
    test: str  # its condition, as written
    first: int  # the lines of the branch Dynamo takes
    last: int

    def describe(self) -> str:
        return f"`if {self.test}:` at {clean_path(self.file) or self.file}:{self.line}"


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return None


def _compiling_polarity(test: ast.AST) -> bool | None:
    """True when ``test`` is true only while Dynamo traces (the body is compiled-only), False when it is
    false only then (the ``else`` is), None when eager and the compiled program may agree."""
    name = _call_name(test)
    if name in _COMPILING_FUNCS:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _compiling_polarity(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        pol = [_compiling_polarity(v) for v in test.values]
        if isinstance(test.op, ast.Or):  # `is_scripting() or is_compiling()`: eager takes the else
            if True in pol and all(p is True or _call_name(v) in _EAGER_FALSE_FUNCS for p, v in zip(pol, test.values)):
                return True
        elif True in pol:  # `is_compiling() and x`: the body never runs in eager
            return True
    return None


@functools.lru_cache(maxsize=256)
def _compiler_branches(path: str, mtime: float) -> tuple[CompilerBranch, ...]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        pol = _compiling_polarity(node.test)
        branch = node.body if pol is True else node.orelse if pol is False else None
        if not branch:
            continue
        test = (ast.get_source_segment(text, node.test) or "").replace("\n", " ")
        out.append(CompilerBranch(path, node.lineno, " ".join(test.split()), branch[0].lineno,
                                  max(getattr(b, "end_lineno", None) or b.lineno for b in branch)))
    return tuple(out)


def compiler_branch(frames: list[Location]) -> CompilerBranch | None:
    """The innermost branch that only ``torch.compile`` takes among ``frames`` (a node's stack, outermost
    first; torch's and fxlint's own frames are skipped): the code at those frames does not run in eager."""
    for loc in reversed(frames):
        if is_internal_file(loc.file) or loc.file.startswith("<"):
            continue
        try:
            mtime = os.path.getmtime(loc.file)
        except OSError:
            continue
        inside = [b for b in _compiler_branches(loc.file, mtime) if b.first <= loc.line <= b.last]
        if inside:
            return min(inside, key=lambda b: b.last - b.first)
    return None


# --------------------------------------------------------------------------- one line as code


@dataclass(frozen=True)
class Line:
    """One stripped source line and its AST."""

    code: str
    tree: ast.AST
    shift: int  # characters added in front of ``code`` to make it parse

    def text(self, node: ast.expr) -> str:
        raw = self.code.encode()
        start, end = self._span(node)
        return raw[start:end].decode()

    def replaced(self, node: ast.expr, text: str) -> str:
        raw = self.code.encode()
        start, end = self._span(node)
        return (raw[:start] + text.encode() + raw[end:]).decode()

    def _span(self, node: ast.expr) -> tuple[int, int]:
        """Byte offsets of ``node`` in ``code`` (``ast`` counts UTF-8 bytes)."""
        end = node.end_col_offset
        assert end is not None, "parsed nodes carry their end offset"
        return node.col_offset - self.shift, end - self.shift

    def unique(self, match: Callable[[ast.AST], bool]) -> ast.AST | None:
        """The one node that matches, or None when there are none or several."""
        found = [n for n in ast.walk(self.tree) if match(n)]
        return found[0] if len(found) == 1 else None


def parse_line(code: str | None) -> Line | None:
    """``code`` parsed as a statement, as an expression inside a call or a literal
    (``("label", lambda x: x[[1]]),``) or as a block header (``if x[m].any():``);
    None when it is not complete on its own."""
    if not code:
        return None
    attempts = [("", code), ("(", f"({code.rstrip(',')})"), ("", f"{code} pass")]  # `if x[m].any():` too
    for prefix, text in attempts:
        try:
            return Line(code, ast.parse(text), len(prefix))
        except SyntaxError:
            continue
    return None
