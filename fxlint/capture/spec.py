"""Input SPECs for the CLI: ``randn(2,3,224,224)``, ``randint(0,1000,(2,64))``,
``zeros(4,8,dtype=float16)``, ``randn(2,8,3,4).permute(0,2,1,3)``, or
``@pkg.mod:make_inputs``.

The text is parsed with ``ast`` and checked against a small grammar; nothing
is ever ``eval``-ed.

Grammar::

    spec    := number | bool | call method* | "@" TARGET
    call    := FACTORY "(" args ")"
    FACTORY := randn | rand | zeros | ones | empty | full | randint | arange | eye | tensor
    method  := "." METHOD "(" args ")" | ".T" | ".mT"
    METHOD  := permute | transpose | contiguous | to | t | unsqueeze | expand | half | float
               | double | bfloat16 | long | int | bool | requires_grad_ | narrow | flip
    args    := int | float | bool | tuple/list of those | NAME=value
    keyword values: dtype=float16 (or torch.float16), device="cpu",
               memory_format=channels_last, requires_grad=True
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import torch

from ..errors import SpecError

_FACTORIES: dict[str, Callable[..., torch.Tensor]] = {
    "randn": torch.randn, "rand": torch.rand, "zeros": torch.zeros, "ones": torch.ones,
    "empty": torch.empty, "full": torch.full, "randint": torch.randint, "arange": torch.arange,
    "eye": torch.eye, "tensor": torch.tensor,
}
_METHODS = {
    "permute", "transpose", "contiguous", "to", "t", "unsqueeze", "expand", "half", "float",
    "double", "bfloat16", "long", "int", "bool", "requires_grad_", "narrow", "flip", "reshape",
    "view", "clone",
}
_ATTRS = {"T", "mT"}
_DTYPES = {
    name: getattr(torch, name)
    for name in (
        "float16", "half", "float32", "float", "float64", "double", "bfloat16", "int8", "uint8",
        "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
    )
}
_MEMORY_FORMATS = {
    "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d,
    "contiguous_format": torch.contiguous_format, "preserve_format": torch.preserve_format,
}
_KWARGS = {"dtype", "device", "memory_format", "requires_grad", "low", "high", "size", "fill_value",
           "generator_seed"}


def parse_spec(text: str) -> Any:
    """Build the value described by one SPEC (a tensor, number or bool), or the
    inputs returned by ``@TARGET``."""
    text = text.strip()
    if not text:
        raise SpecError("empty input SPEC; e.g. --input 'randn(2,3,224,224)'")
    if text.startswith("@"):
        from .target import load_object

        obj = load_object(text[1:])
        if not callable(obj):
            return obj
        try:
            return obj()
        except Exception as exc:
            raise SpecError(f"input factory {text[1:]!r} raised {type(exc).__name__}: {exc}") from exc
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"cannot parse input SPEC {text!r}: {exc.msg}") from None
    return _Builder(text).value(tree.body)


class _Builder:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: ast.AST, why: str) -> SpecError:
        col = getattr(node, "col_offset", None)
        where = f" at column {col + 1}" if col is not None else ""
        return SpecError(f"bad input SPEC {self.text!r}{where}: {why}")

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.value(node.operand)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute) and node.attr in _ATTRS:
            base = self.value(node.value)
            if not isinstance(base, torch.Tensor):
                raise self.fail(node, f".{node.attr} needs a tensor")
            return getattr(base, node.attr)
        raise self.fail(node, "expected a factory call such as randn(2,3), a number, or @pkg.mod:make_inputs")

    def call(self, node: ast.Call) -> torch.Tensor:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in _FACTORIES:
                raise self.fail(func, f"unknown factory {func.id!r}; use one of {', '.join(sorted(_FACTORIES))}")
            args, kwargs = self.arguments(node)
            seed = kwargs.pop("generator_seed", None)
            gen = torch.Generator().manual_seed(int(seed)) if seed is not None else None
            if gen is not None and func.id in ("randn", "rand", "randint"):
                kwargs["generator"] = gen
            if func.id == "tensor" and args:
                args = [args[0]]
            try:
                return _FACTORIES[func.id](*args, **kwargs)
            except (TypeError, RuntimeError, ValueError) as exc:
                raise self.fail(node, f"{func.id}(...) failed: {_first_line(exc)}") from None
        if isinstance(func, ast.Attribute):
            if func.attr not in _METHODS:
                raise self.fail(func, f"unknown method .{func.attr}(); allowed: {', '.join(sorted(_METHODS))}")
            base = self.value(func.value)
            if not isinstance(base, torch.Tensor):
                raise self.fail(func, f".{func.attr}() needs a tensor")
            args, kwargs = self.arguments(node)
            try:
                return getattr(base, func.attr)(*args, **kwargs)
            except (TypeError, RuntimeError, ValueError, IndexError) as exc:
                raise self.fail(node, f".{func.attr}(...) failed: {_first_line(exc)}") from None
        raise self.fail(node, "expected a factory call such as randn(2,3)")

    def arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        args = [self.literal(a) for a in node.args]
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in _KWARGS:
                raise self.fail(kw.value, f"unknown keyword {kw.arg!r}; allowed: {', '.join(sorted(_KWARGS))}")
            kwargs[kw.arg] = self.keyword(kw.arg, kw.value)
        return args, kwargs

    def literal(self, node: ast.expr) -> Any:
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.literal(e) for e in node.elts)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.literal(node.operand)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
        name = _dotted(node)
        if name is not None:
            short = name.removeprefix("torch.")
            if short in _DTYPES:
                return _DTYPES[short]
            if short in _MEMORY_FORMATS:
                return _MEMORY_FORMATS[short]
        raise self.fail(node, "arguments must be numbers, tuples of numbers, dtypes or memory formats")

    def keyword(self, key: str, node: ast.expr) -> Any:
        if key == "dtype":
            name = _dotted(node)
            short = name.removeprefix("torch.") if name else None
            if short not in _DTYPES:
                raise self.fail(node, f"unknown dtype; use one of {', '.join(sorted(_DTYPES))}")
            return _DTYPES[short]
        if key == "memory_format":
            name = _dotted(node)
            short = name.removeprefix("torch.") if name else None
            if short not in _MEMORY_FORMATS:
                raise self.fail(node, f"unknown memory_format; use one of {', '.join(sorted(_MEMORY_FORMATS))}")
            return _MEMORY_FORMATS[short]
        if key == "device":
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    return torch.device(node.value)
                except RuntimeError as exc:
                    raise self.fail(node, _first_line(exc)) from None
            name = _dotted(node)
            if name in ("cpu", "cuda", "meta"):
                return torch.device(name)
            raise self.fail(node, "device must be a string such as 'cpu'")
        if key == "requires_grad":
            if isinstance(node, ast.Constant) and isinstance(node.value, bool):
                return node.value
            raise self.fail(node, "requires_grad must be True or False")
        return self.literal(node)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def parse_specs(texts: list[str]) -> tuple[Any, ...] | dict[str, Any]:
    """Several --input SPECs as positional inputs. An ``@factory`` may return a
    tuple (several inputs) or, alone, a dict of keyword inputs."""
    values: list[Any] = []
    for t in texts:
        v = parse_spec(t)
        if isinstance(v, dict):
            if len(texts) != 1:
                raise SpecError(f"{t!r} returned keyword inputs (a dict); it must be the only --input")
            return v
        if t.strip().startswith("@") and isinstance(v, (list, tuple)):
            values.extend(v)
        else:
            values.append(v)
    return tuple(values)
