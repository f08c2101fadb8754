"""How fxlint shows ops, sizes and operands in messages: the one home for that text.

Every rule and rewrite renders through these functions, so one thing reads the
same in every message:

* bytes: ``bytes_text`` (``6.3 MB``; a symbolic size as its formula,
  ``4*s0*s1 bytes``; None as ``an unknown number of bytes``);
* shapes and strides as Python tuples: ``shape_text`` (``(2, 3)``, ``(5,)``),
  ``layout_text`` (``float32 (2, 3) with strides (3, 1)``);
* a permute as the user wrote it where the graph says how (``.t()``, ``.T``,
  ``.mT``, ``.transpose(-2, -1)``, ``.permute(0, 3, 1, 2)``), and as the
  shortest call otherwise (a suggested ``.transpose(1, 2)``): ``permute_text``;
* a layout-making call (``call_text``: ``.permute(0, 3, 1, 2)``, ``[:, ::2]``,
  ``.expand(4, 8)``) and a step of a view chain (``step_text``);
* slices (``slice_text``: ``::2``, ``1:6:2``, ``:n``);
* operands by the user's names (``operand_name``), places (``line_of``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tensor.info import Dim, TensorInfo, human_bytes, known
from .nodes import slice_text

if TYPE_CHECKING:  # pragma: no cover
    from . import CanonNode

#: spellings of a permute that swap two dims the user named (``x.transpose(1, 2)``)
TRANSPOSE_SPELLINGS = frozenset({"transpose", "transpose_", "swapaxes", "swapdims"})
#: spellings shown as written (they take no dims)
_AS_WRITTEN = {"t": ".t()", "T": ".T", "mT": ".mT"}


# --------------------------------------------------------------------------- sizes


def bytes_text(n: Dim | None) -> str:
    """``6.3 MB`` for a known size, the formula for a symbolic one (``4*s0*s1 bytes``), and
    ``an unknown number of bytes`` for None."""
    if n is None:
        return "an unknown number of bytes"
    k = known(n)
    return human_bytes(k) if k is not None else f"{n} bytes"


def bytes_value(n: Dim | None) -> int | str | None:
    """Bytes as a violation field (JSON-friendly): an int, or the formula under dynamic shapes."""
    if n is None:
        return None
    k = known(n)
    return k if k is not None else str(n)


def shape_value(shape: Sequence[Dim]) -> tuple[int | str, ...]:
    """A shape or strides as a violation field (JSON-friendly): ints, and a formula as its text under
    dynamic shapes (``shape_text`` shows either the same way)."""
    return tuple(k if (k := known(d)) is not None else str(d) for d in shape)


def torch_name(x: Any) -> str:
    """A dtype or memory format as people write it after ``torch.``: ``float32``, ``channels_last``."""
    return str(x).replace("torch.", "")


def dims_value(dims: Sequence[Dim] | None) -> tuple[int | str, ...] | None:
    """A shape or strides as a violation field (JSON-friendly): ints, and a symbolic size as its
    formula; ``shape_text`` shows it as the tensor's own shape would be shown."""
    if dims is None:
        return None
    return tuple(k if (k := known(d)) is not None else str(d) for d in dims)


def shape_text(shape: Sequence[Dim | str] | TensorInfo | None) -> str:
    """A shape (or a tensor's shape) as a Python tuple: ``(2, 3)``, ``(5,)``, ``()``; ``?`` for None."""
    if isinstance(shape, TensorInfo):
        shape = shape.shape
    if shape is None:
        return "?"
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def strides_text(t: TensorInfo | None) -> str:
    """A tensor's strides as a Python tuple; ``?`` for an unknown tensor."""
    return shape_text(t.stride if t is not None else None)


def args_text(shape: Sequence[Dim | str]) -> str:
    """A shape as call arguments: ``2, 3``."""
    return ", ".join(str(s) for s in shape)


def layout_text(t: TensorInfo) -> str:
    """``float32 (2, 3) with strides (3, 1)``."""
    return strided_text(torch_name(t.dtype), t.shape, t.stride)


def strided_text(dtype: str, shape: Sequence[Dim | str], stride: Sequence[Dim | str]) -> str:
    """``layout_text`` from its parts (a violation's fields): ``float32 (2, 3) with strides (3, 1)``."""
    return f"{dtype} {shape_text(shape)} with strides {shape_text(stride)}"


# --------------------------------------------------------------------------- ops


def permute_text(dims: Sequence[int] | None, spelling: str | None = None,
                 written: Sequence[Any] | None = None) -> str:
    """How a permute is shown: as the user spelled it where ``spelling`` says (``.t()``, ``.T``,
    ``.mT``; ``.transpose(i, j)`` with the dims as ``written``; a one-operand ``torch.einsum`` with its
    equation), and for a suggested or
    unknown spelling the shortest call (``.transpose(i, j)`` when it swaps two dims, else
    ``.permute(...)``)."""
    if dims is None:
        return ".permute(...)"
    if spelling == "einsum" and isinstance(written, str):  # a one-operand einsum that only permutes
        return f'torch.einsum("{written}", ...)'
    if spelling in _AS_WRITTEN:
        return _AS_WRITTEN[spelling]
    moved = [i for i, d in enumerate(dims) if d != i]
    if len(moved) == 2 and (spelling is None or spelling in TRANSPOSE_SPELLINGS):
        i, j = written if written is not None and len(written) == 2 else moved
        return f".transpose({i}, {j})"
    return ".permute(" + ", ".join(str(d) for d in dims) + ")"


def spelled_name(node: CanonNode) -> str:
    """The name the op was called by: ``transpose`` for ``Tensor.transpose``, ``torch.transpose``
    and ``aten.transpose.int`` alike."""
    s = node.spelling
    if s.startswith("aten.") and s.count(".") >= 2:
        return s.split(".")[1]
    return s.rsplit(".", 1)[-1]


def _permute_of(node: CanonNode) -> str:
    return permute_text(node.args.get("dims"), spelled_name(node), node.args.get("written"))


def call_text(node: CanonNode) -> str:
    """How the user spelled a layout-making call, e.g. ``.permute(0, 3, 1, 2)``, ``[:, ::2]``."""
    op = node.op
    if op == "permute":
        return _permute_of(node)
    if op == "slice":
        return node.args["index"].render()
    if op == "expand":
        shape = node.args.get("shape")
        return f".expand({args_text(shape)})" if shape is not None else ".expand(...)"
    if op in ("view", "reshape"):
        shape = node.args.get("shape")
        name = node.spelling.rsplit(".", 1)[-1] if "." in node.spelling else node.spelling
        name = {"default": "reshape", "using_ints": "flatten", "Tensor": "view"}.get(name, name)
        return f".{name}({args_text(shape)})" if shape is not None else f".{name}(...)"
    short = node.spelling.rsplit(".", 1)[-1]
    return f".{short}(...)"


def step_text(node: CanonNode) -> str:
    """One step of a view chain by its canonical op (``.view(2, 16, 4, 8)``, ``.contiguous()``),
    a permute or slice as ``call_text`` shows it."""
    op = node.op
    if op == "permute":
        return _permute_of(node)
    if op == "slice":
        spec = node.args.get("index")
        return spec.render() if spec is not None else "[...]"
    if op in ("expand", "view", "reshape"):
        shape = node.args.get("shape")
        return f".{op}(" + ", ".join(str(s) for s in shape) + ")" if shape else f".{op}(...)"
    if op == "contiguous":
        return ".contiguous()"
    return f".{op}(...)"


def factory_text(node: CanonNode) -> str:
    kind = node.args.get("kind", "tensor")
    return f"torch.{kind}(...)"


# --------------------------------------------------------------------------- operands and places

_DYNAMO_INPUT = re.compile(r"L\['(\w+)'\]")
#: the slots of the value stack Dynamo hands a resumed frame (``L['stack0']``, ``l_stack0_1_``; torch 2.13
#: names them ``___stack0``)
_RESUME_SLOT = re.compile(r"_*stack\d+(_\d+)*")


def from_before_break(node: CanonNode | None) -> bool:
    """``node`` is an input of the frame Dynamo resumes after a graph break: a value of the user's code before
    the break, which has no name of the user's in this graph."""
    if node is None or node.kind != "input":
        return False
    m = _DYNAMO_INPUT.fullmatch(node.param_name or "")
    bare = node.name.removeprefix("l_").removesuffix("_") or node.name
    return bool(_RESUME_SLOT.fullmatch(bare) or (m and _RESUME_SLOT.fullmatch(m.group(1))))


def operand_name(node: CanonNode | None) -> str:
    """A short name for a node in messages: the user's name for an input (Dynamo names inputs by
    source, ``L['x']``; the user wrote ``x``), the dotted name of a parameter or buffer, else the
    node name."""
    if node is None:
        return "x"
    if node.kind == "input":
        m = _DYNAMO_INPUT.fullmatch(node.param_name or "")
        if m and not _RESUME_SLOT.fullmatch(m.group(1)):
            return m.group(1)
        if from_before_break(node):  # Dynamo calls it stack0, stack0_1...: no name of the user's in this graph
            return "a value from before the graph break"
        return node.name.removeprefix("l_").removesuffix("_") or node.name
    name = node.param_name or node.name
    m = _DYNAMO_INPUT.fullmatch(name)
    if m:
        return m.group(1)
    if node.kind == "op" and node.param_name is None:
        return user_name(node) or name
    return name


_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # a name the line spells, not an attribute (`.expand`)
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?(?:[-+*/@%&|^]|//|<<|>>|\*\*)?=(?!=)")


def source_statement(node: CanonNode | None) -> Any:
    """The node's source statement parsed as one Python statement (``ast``), or None. The line alone
    when it is a whole statement; else the simple statement of the node's file that spans the line (a
    call or a subscript written over several lines: the reported line is one of them)."""
    import ast

    src = node.source if node is not None else None
    if not src:
        return None
    try:
        tree = ast.parse(src.strip())
    except SyntaxError:
        loc = node.location if node is not None else None
        return _spanning_statement(loc.file, loc.line) if loc is not None else None
    return tree.body[0] if len(tree.body) == 1 else None


_TREES: dict[tuple[str, int], list[Any]] = {}


def _spanning_statement(file: str | None, line: int | None) -> Any:
    """The innermost simple statement (not an ``if``/``for``/``def`` with a body) of ``file`` whose lines
    include ``line``, or None (no such file, or it does not parse)."""
    import ast
    import linecache

    if not file or line is None:
        return None
    text = "".join(linecache.getlines(file))
    if not text:
        return None
    key = (file, hash(text))
    stmts = _TREES.get(key)
    if stmts is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            tree = None
        stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not hasattr(n, "body")] if tree else []
        if len(_TREES) > 64:
            _TREES.clear()
        _TREES[key] = stmts
    spans = [n for n in stmts if n.lineno <= line <= (n.end_lineno or n.lineno)]
    return min(spans, key=lambda n: (n.end_lineno or n.lineno) - n.lineno) if spans else None


def source_subscript(node: CanonNode | None, base: str) -> list[str] | None:
    """``["perm // num_top_k"]``: the items of the subscript of ``base`` as the user's line writes them
    (the one subscript of that name on the line), or None when the line does not show exactly one."""
    found = written_subscript(node, base)
    return found[1] if found is not None else None


def written_subscript(node: CanonNode | None, base: str) -> tuple[str, list[str]] | None:
    """(the subscripted value, its items) as the user's statement writes them: ``("self.table",
    ["self.index.view(-1)"])`` for a parameter ``blocks.1.attn.table`` (its attribute is what the line
    spells), ``("hidden_states", ["perm // num_top_k"])``; None when the statement does not show exactly
    one subscript of that name."""
    import ast

    stmt = source_statement(node)
    if stmt is None:
        return None
    leaf = base.rsplit(".", 1)[-1]

    def spelled(value: ast.expr) -> bool:
        text = ast.unparse(value)
        return text == base or text.endswith("." + base) or ("." in base and text.endswith("." + leaf))

    found = [n for n in ast.walk(stmt) if isinstance(n, ast.Subscript) and spelled(n.value)]
    if len(found) != 1:
        return None
    sl = found[0].slice
    items = [ast.unparse(e) for e in sl.elts] if isinstance(sl, ast.Tuple) else [ast.unparse(sl)]
    return ast.unparse(found[0].value), items


def user_name(node: CanonNode) -> str | None:
    """The user's name for an op's value, read from its source line, never Dynamo's node name: Dynamo
    names a node after the local it is stored in (``x_1`` for the second value of ``x``), so the name,
    or that name without its counter, when the line spells it; else the variable the line assigns,
    when this is the value that leaves the line (no user on the same line). None when the line does
    not say (an expression inside a larger one: ``perm // k`` in ``h[perm // k]``)."""
    src = node.source
    if not src:
        return None
    idents = set(_IDENT.findall(src))
    if node.name in idents:
        return node.name
    base = re.sub(r"_\d+$", "", node.name)
    if base != node.name and base in idents:
        return base
    m = _ASSIGNED.match(src)
    loc = node.location
    if m and loc is not None and all(u.location is None or (u.location.file, u.location.line) != (loc.file, loc.line)
                                     for u in node.users):
        return m.group(1)
    return None


def line_of(node: CanonNode | None) -> str:
    """``line 12`` (``node x`` when the graph has no source lines; ``?`` for no node)."""
    if node is None:
        return "?"
    if node.location is None:
        return f"node {node.name}"
    return f"line {node.location.line}"


def line_from(node: CanonNode, at: CanonNode) -> str:
    """Where ``node`` is, said from a finding at ``at``: ``line 12``, or ``attend.py:596`` when ``node`` is in
    another file than ``at``."""
    loc, here = node.location, at.location
    if loc is not None and here is not None and loc.file != here.file:
        return f"{loc.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{loc.line}"
    return line_of(node)


__all__ = [
    "TRANSPOSE_SPELLINGS",
    "args_text",
    "bytes_text",
    "bytes_value",
    "call_text",
    "dims_value",
    "factory_text",
    "from_before_break",
    "layout_text",
    "line_of",
    "operand_name",
    "permute_text",
    "shape_text",
    "shape_value",
    "slice_text",
    "spelled_name",
    "step_text",
    "strided_text",
    "strides_text",
    "torch_name",
]
