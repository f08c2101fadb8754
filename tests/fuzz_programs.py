"""Random programs for the property tests (tests/test_fuzz.py), written out as real Python source.

A program is an ``nn.Module`` whose ``forward`` is a straight run of statements, one op per line,
over a pool of live tensors: view ops (permute, transpose, ``.mT``, step slices, expand, unsqueeze,
reshape/view/flatten, narrow), index ops (constant lists, ``torch.arange``, a buffer of indices,
boolean masks), copies (contiguous, clone, ``.to``, repeat), compute ops (matmul, bmm, linear,
conv, layer/group/batch norm, softmax, elementwise) and gradient cuts (``.detach()``, a
``with torch.no_grad():`` block). Parameters, modules and index buffers live in ``__init__``;
``make()`` builds the module and its inputs from a fixed seed.

The generator (``programs()``, a hypothesis strategy) runs every candidate line eagerly on small
tensors of the same shapes and dtypes while it writes it, so every program it returns runs; a
candidate that raises (a shape that does not fit) is dropped. The source goes to a file and is
imported (``Program.load``), so Dynamo records real stack traces: findings have lines, and the
runtime audit attributes copies to the same lines.

``check_lint`` and ``check_rewrite`` are the properties; the regression tests in test_fuzz.py call
them on hand-kept programs.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import math
import shutil
import sys
import tempfile
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils._pytree as pytree
from hypothesis import strategies as st

MAX_NUMEL = 1536  # keeps every tensor tiny: the properties cost capture and profiling, not FLOPs
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64}

_dir: Path | None = None
_counter = itertools.count()


def _workdir() -> Path:
    global _dir
    if _dir is None:
        _dir = Path(tempfile.mkdtemp(prefix="fxlint_fuzz_"))
        # removed when the test process ends (a failing program is printed by hypothesis: its source is the report)
        atexit.register(shutil.rmtree, _dir, ignore_errors=True)
    return _dir


@dataclass
class Program:
    source: str
    name: str = "fuzz_prog"
    path: Path | None = None

    def load(self) -> tuple[nn.Module, tuple[Any, ...]]:
        """Write the source to a fresh file, import it, and return ``make()``."""
        n = next(_counter)
        self.path = _workdir() / f"{self.name}_{n}.py"
        self.path.write_text(self.source)
        spec = importlib.util.spec_from_file_location(f"{self.name}_{n}", self.path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod.make()

    def __str__(self) -> str:
        return self.source


# --------------------------------------------------------------------------- generation


@dataclass
class _Var:
    name: str
    value: torch.Tensor  # an eager value with the shape, strides and dtype the line produces
    fresh: bool = False  # its own memory, from a gather, clone or repeat: safe to write in place


@dataclass
class _State:
    pool: list[_Var] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    init: list[str] = field(default_factory=list)  # lines of __init__
    attrs: SimpleNamespace = field(default_factory=SimpleNamespace)  # eager stand-ins for self.*
    n: int = 0
    made_fresh: bool = False  # set by _candidate: the line's result owns fresh memory

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _indexer(d: int, item: str) -> str:
    return "[" + ":, " * d + item + "]"


def _target_shape(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = math.prod(shape)
    mode = draw(st.sampled_from(["flatten", "merge", "split", "minus1"]))
    if mode == "flatten" or not shape:
        return (n,)
    if mode == "merge" and len(shape) >= 2:
        d = draw(st.integers(0, len(shape) - 2))
        return shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:]
    if mode == "split":
        d = draw(st.integers(0, len(shape) - 1))
        divs = [k for k in range(1, shape[d] + 1) if shape[d] % k == 0]
        k = draw(st.sampled_from(divs))
        return shape[:d] + (k, shape[d] // k) + shape[d + 1:]
    return (shape[0], -1) if len(shape) >= 2 else (-1,)


def _candidate(draw: Any, s: _State, v: _Var) -> tuple[str, list[str]] | None:
    """One line over ``v`` (and maybe another live tensor): (expression, __init__ lines)."""
    t = v.value
    r = t.dim()
    x = v.name
    floating = t.is_floating_point()
    f32 = t.dtype == torch.float32
    family = draw(st.sampled_from(["view"] * 3 + ["index"] * 2 + ["copy"] * 3 + ["compute"] * 3 + ["cut"]))
    init: list[str] = []
    if family == "view":
        kind = draw(st.sampled_from(["permute", "transpose", "mT", "step", "expand", "unsqueeze", "reshape",
                                     "view", "flatten", "narrow", "T"]))
        if kind == "permute" and r >= 2:
            return f"{x}.permute({', '.join(map(str, draw(st.permutations(range(r)))))})", init
        if kind == "transpose" and r >= 2:
            a, b = draw(st.integers(-r, r - 1)), draw(st.integers(0, r - 1))
            return f"{x}.transpose({a}, {b})", init
        if kind == "mT" and r >= 2:
            return f"{x}.mT", init
        if kind == "T" and r == 2:
            return f"{x}.t()", init
        if kind == "step" and r >= 1:
            d = draw(st.integers(0, r - 1))
            start, step = draw(st.integers(0, 1)), draw(st.integers(2, 3))
            first = str(start) if start else ""
            return f"{x}{_indexer(d, f'{first}::{step}')}", init
        if kind == "expand":
            ones = [d for d in range(r) if t.shape[d] == 1]
            if ones:
                shape = list(t.shape)
                shape[draw(st.sampled_from(ones))] = draw(st.integers(2, 4))
                return f"{x}.expand({', '.join(map(str, shape))})", init
            if r < 4:
                d = draw(st.integers(0, r))
                shape = list(t.shape)
                shape.insert(d, draw(st.integers(2, 3)))
                return f"{x}.unsqueeze({d}).expand({', '.join(map(str, shape))})", init
            return None
        if kind == "unsqueeze" and r < 4:
            return f"{x}.unsqueeze({draw(st.integers(-r - 1, r))})", init
        if kind in ("reshape", "view") and r >= 1:
            return f"{x}.{kind}({', '.join(map(str, _target_shape(draw, tuple(t.shape))))})", init
        if kind == "flatten" and r >= 2:
            a = draw(st.integers(0, r - 2))
            return f"{x}.flatten({a}, {draw(st.integers(a + 1, r - 1))})", init
        if kind == "narrow" and r >= 1:
            d = draw(st.integers(0, r - 1))
            if t.shape[d] >= 2:
                start = draw(st.integers(0, t.shape[d] - 1))
                return f"{x}.narrow({d}, {start}, {draw(st.integers(1, t.shape[d] - start))})", init
        return None
    if family == "index":
        if r == 0:
            return None
        d = draw(st.integers(0, r - 1))
        size = t.shape[d]
        if size == 0:
            return None
        kind = draw(st.sampled_from(["progression"] * 2 + ["list", "arange", "index_select", "buffer"] * 2 + ["mask"]))
        s.made_fresh = True  # every advanced index gathers into new memory
        if kind == "progression":
            start = draw(st.integers(0, size - 1))
            step = draw(st.integers(1, 3))
            idx = list(range(start, size, step))[: draw(st.integers(1, 6))]
            return f"{x}{_indexer(d, str(idx))}", init
        if kind == "list":
            idx = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=5))
            return f"{x}{_indexer(d, str(idx))}", init
        if kind in ("arange", "index_select"):
            start = draw(st.integers(0, size - 1))
            step = draw(st.integers(1, 2))
            stop = draw(st.integers(start + 1, size))
            if kind == "arange":
                return f"{x}{_indexer(d, f'torch.arange({start}, {stop}, {step})')}", init
            return f"{x}.index_select({d}, torch.arange({start}, {stop}, {step}))", init
        if kind == "buffer":
            name = s.fresh("idx")
            vals = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=5))
            setattr(s.attrs, name, torch.tensor(vals))
            init.append(f"self.register_buffer({name!r}, torch.tensor({vals}))")
            return f"{x}{_indexer(d, f'self.{name}')}", init
        # a mask whose count of True does not depend on the values: the shapes the generator
        # sees are the shapes the program has
        return f"{x}{_indexer(d, f'torch.arange({size}) % 2 == 0')}", init
    if family == "copy":
        kind = draw(st.sampled_from(["contiguous", "contiguous", "clone", "to", "float", "repeat", "channels_last",
                                     "reshape_copy", "roundtrip", "expand_contiguous", "repeat_broadcast",
                                     "repeat_broadcast"]))
        if kind == "contiguous":
            return f"{x}.contiguous()", init
        if kind == "clone":
            s.made_fresh = True
            return f"{x}.clone()", init
        if kind == "to":
            dt = draw(st.sampled_from(["float32", "float64", "float16", "bfloat16"] if floating else
                                      ["int64", "float32"]))
            return f"{x}.to(torch.{dt})", init
        if kind == "float":
            return f"{x}.float()", init
        if kind == "repeat" and r >= 1:
            reps = [draw(st.integers(1, 3)) if t.shape[d] == 1 else 1 for d in range(r)]
            s.made_fresh = True
            return f"{x}.repeat({', '.join(map(str, reps))})", init
        if kind == "channels_last" and r == 4:
            return f"{x}.contiguous(memory_format=torch.channels_last)", init
        if kind == "roundtrip" and floating:
            via = draw(st.sampled_from([d for d in ("float16", "float64", "float32") if DTYPES[d] != t.dtype]))
            back = next(k for k, d in DTYPES.items() if d == t.dtype)
            return f"{x}.to(torch.{via}).to(torch.{back})", init
        if kind == "expand_contiguous" and r >= 1:
            ones = [d for d in range(r) if t.shape[d] == 1]
            if ones:
                shape = list(t.shape)
                shape[draw(st.sampled_from(ones))] = draw(st.integers(2, 4))
                return f"{x}.expand({', '.join(map(str, shape))}).contiguous()", init
            return None
        if kind == "repeat_broadcast" and r >= 1:
            # a repeat (or expand().contiguous()) of size-1 dims whose consumer broadcasts anyway
            ones = [d for d in range(r) if t.shape[d] == 1]
            if not ones:
                return None
            d = draw(st.sampled_from(ones))
            full = list(t.shape)
            full[d] = draw(st.integers(2, 4))
            other = f"torch.ones({', '.join(map(str, full))}, dtype={x}.dtype)"
            if draw(st.booleans()):
                reps = [full[k] if k == d else 1 for k in range(r)]
                return f"{x}.repeat({', '.join(map(str, reps))}) * {other}", init
            return f"{x}.expand({', '.join(map(str, full))}).contiguous() + {other}", init
        if kind == "reshape_copy" and r >= 2:
            return f"{x}.transpose(0, 1).reshape(-1)", init
        return None
    if family == "compute":
        kind = draw(st.sampled_from(["matmul_param", "matmul_self", "bmm", "linear", "F.linear", "conv",
                                     "layer_norm", "group_norm", "batch_norm", "softmax", "unary",
                                     "binary", "binary", "scalar", "sum", "where"]))
        if kind == "unary":
            fn = draw(st.sampled_from(["torch.relu", "torch.sigmoid", "torch.tanh", "torch.abs", "F.gelu",
                                       "torch.exp"]))
            return f"{fn}({x})", init
        if kind == "scalar":
            return f"{x} {draw(st.sampled_from(['*', '+', '-']))} {draw(st.sampled_from(['2', '0.5', '1']))}", init
        if kind == "binary":
            same = [u for u in s.pool if u.value.shape == t.shape and u.value.dtype == t.dtype and u is not v]
            other = draw(st.sampled_from(same)).name if same and draw(st.booleans()) else x
            if r >= 1 and draw(st.booleans()):  # a broadcast operand: a reduced dim kept as size 1
                d = draw(st.integers(0, r - 1))
                other = f"{other}.sum({d}, keepdim=True)" if floating else other
            return f"{x} {draw(st.sampled_from(['+', '*', '-']))} {other}", init
        if kind == "sum" and r >= 1:
            return f"{x}.sum({draw(st.integers(-r, r - 1))})", init
        if kind == "where" and floating:
            return f"torch.where({x} > 0, {x}, 0.0)", init
        if not f32:
            return None
        last = t.shape[-1] if r else 0
        if kind == "matmul_param" and r >= 1 and last > 0:
            name = s.fresh("w")
            m = draw(st.integers(1, 5))
            setattr(s.attrs, name, nn.Parameter(torch.randn(last, m)))
            init.append(f"self.{name} = nn.Parameter(torch.randn({last}, {m}))")
            return f"{x} @ self.{name}", init
        if kind == "matmul_self" and r >= 2:
            return f"torch.matmul({x}, {x}.transpose(-1, -2))", init
        if kind == "bmm" and r == 3:
            return f"torch.bmm({x}, {x}.transpose(1, 2))", init
        if kind in ("linear", "F.linear") and r >= 1 and last > 0:
            name = s.fresh("lin")
            m = draw(st.integers(1, 5))
            if kind == "linear":
                setattr(s.attrs, name, nn.Linear(last, m))
                init.append(f"self.{name} = nn.Linear({last}, {m})")
                return f"self.{name}({x})", init
            setattr(s.attrs, name, nn.Parameter(torch.randn(m, last)))
            init.append(f"self.{name} = nn.Parameter(torch.randn({m}, {last}))")
            return f"F.linear({x}, self.{name})", init
        if kind == "conv" and r in (3, 4) and t.shape[1] > 0:
            name = s.fresh("conv")
            c, m = t.shape[1], draw(st.integers(1, 4))
            cls = "Conv2d" if r == 4 else "Conv1d"
            setattr(s.attrs, name, getattr(nn, cls)(c, m, 3, padding=1))
            init.append(f"self.{name} = nn.{cls}({c}, {m}, 3, padding=1)")
            return f"self.{name}({x})", init
        if kind == "layer_norm" and r >= 1 and last > 0:
            if draw(st.booleans()):
                name = s.fresh("ln")
                setattr(s.attrs, name, nn.LayerNorm(last))
                init.append(f"self.{name} = nn.LayerNorm({last})")
                return f"self.{name}({x})", init
            return f"F.layer_norm({x}, ({last},))", init
        if kind == "group_norm" and r >= 2 and t.shape[1] > 0:
            return f"F.group_norm({x}, 1)", init
        if kind == "batch_norm" and r == 4 and t.shape[1] > 0 and t.numel() // t.shape[1] > 1:
            name = s.fresh("bn")
            setattr(s.attrs, name, nn.BatchNorm2d(t.shape[1]))
            init.append(f"self.{name} = nn.BatchNorm2d({t.shape[1]})")
            return f"self.{name}({x})", init
        if kind == "softmax" and r >= 1:
            return f"torch.softmax({x}, dim={draw(st.integers(-r, r - 1))})", init
        return None
    # gradient cuts
    if draw(st.booleans()):
        return f"{x}.detach()", init
    return "NO_GRAD", init


def _try(expr: str, s: _State) -> torch.Tensor | None:
    env = {v.name: v.value for v in s.pool}
    env.update(torch=torch, F=F, nn=nn, self=s.attrs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = eval(expr, env)  # noqa: S307 - our own generated expression
    except Exception:  # noqa: BLE001 - the shapes do not fit: the candidate is dropped
        return None
    if not isinstance(out, torch.Tensor) or out.numel() > MAX_NUMEL or out.numel() == 0:
        return None
    return out


@st.composite
def programs(draw: Any, min_lines: int = 3, max_lines: int = 9, masks: bool = True) -> Program:
    """A random program (see the module docstring); ``masks=False`` leaves out boolean-mask
    indexing (a graph break: no single-graph capture for ``fxlint.rewrite``)."""
    s = _State()
    inputs: list[str] = []
    n_inputs = draw(st.integers(1, 2))
    for i in range(n_inputs):
        rank = draw(st.integers(1, 4))
        shape = tuple(draw(st.sampled_from([1, 2, 3, 4, 6])) for _ in range(rank))
        dtype = "float32" if i == 0 else draw(st.sampled_from(["float32", "float32", "float64", "float16",
                                                               "bfloat16", "int64"]))
        grad = dtype in ("float32", "float64") and draw(st.booleans())
        dims = ", ".join(map(str, shape))
        if dtype == "int64":
            inputs.append(f"torch.randint(0, 5, ({dims},))")
            value = torch.randint(0, 5, shape)
        else:
            inputs.append(f"torch.randn({dims}, dtype=torch.{dtype}, requires_grad={grad})")
            value = torch.randn(shape).to(DTYPES[dtype])
        s.pool.append(_Var(f"x{i}", value))
    want = draw(st.integers(min_lines, max_lines))
    attempts = 0
    while len([ln for ln in s.lines if "=" in ln]) < want and attempts < 4 * max_lines:
        attempts += 1
        recent = s.pool[-1]
        if recent.fresh and draw(st.integers(0, 3)) == 0:
            # an in-place write into the tensor the previous line gathered or cloned: a copy that
            # must stay a copy (the rewrites' mutation analysis)
            write = draw(st.sampled_from(["{x}.mul_(2)", "{x}.add_(1)", "{x}[0] = 0", "{x}.zero_()"]))
            line = write.format(x=recent.name)
            env_value = recent.value.clone()
            try:
                exec(line.replace(recent.name, "t"), {"t": env_value})  # noqa: S102 - our own line
            except Exception:  # noqa: BLE001
                continue
            recent.value = env_value
            recent.fresh = False  # one write per tensor is enough
            s.lines.append(line)
            continue
        v = recent if draw(st.integers(0, 9)) < 6 else draw(st.sampled_from(s.pool))
        s.made_fresh = False
        cand = _candidate(draw, s, v)
        if cand is None:
            continue
        expr, init = cand
        in_no_grad = expr == "NO_GRAD"
        if in_no_grad:  # the next op on v, with autograd off
            inner = None
            for _ in range(3):
                inner = _candidate(draw, s, v)
                if inner is not None and inner[0] != "NO_GRAD":
                    break
                inner = None
            if inner is None:
                continue
            expr, init = inner
        if not masks and "% 2 == 0" in expr:
            continue
        out = _try(expr, s)
        if out is None:  # (an attribute the candidate made stays on s.attrs, unused)
            continue
        name = s.fresh()
        s.init.extend(init)
        if in_no_grad:
            s.lines.append("with torch.no_grad():")
            s.lines.append(f"    {name} = {expr}")
        else:
            s.lines.append(f"{name} = {expr}")
        s.pool.append(_Var(name, out, fresh=s.made_fresh and not in_no_grad))
    made = [v for v in s.pool if not v.name.startswith("x")]
    if not made:
        made = [s.pool[0]]
        s.lines.append(f"v0 = {s.pool[0].name} * 2")
        made = [_Var("v0", s.pool[0].value * 2)]
    outs = [made[-1].name]
    extra = draw(st.lists(st.sampled_from(made[:-1]), max_size=2, unique_by=lambda v: v.name)) if len(made) > 1 else []
    outs += [v.name for v in extra]
    return Program(_render(s, inputs, outs, n_inputs))


def _render(s: _State, inputs: list[str], outs: list[str], n_inputs: int) -> str:
    args = ", ".join(f"x{i}" for i in range(n_inputs))
    init = "\n".join(f"        {ln}" for ln in s.init) or "        pass"
    body = "\n".join(f"        {ln}" for ln in s.lines)
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ",)"
    return textwrap.dedent("""\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Prog(nn.Module):
            def __init__(self):
                super().__init__()
        {init}

            def forward(self, {args}):
        {body}
                return {ret}


        def make():
            torch.manual_seed(0)
            return Prog(), ({inputs},)
        """).format(init=init, args=args, body=body, ret=ret, inputs=", ".join(inputs))


# --------------------------------------------------------------------------- the properties


def _floating_outputs(out: Any) -> list[torch.Tensor]:
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad
            and (o.is_floating_point() or o.is_complex())]


def run_with_grads(fn: Any, module: nn.Module, inputs: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """Outputs of ``fn`` on clones of ``inputs``, and the gradients of a fixed weighted sum of them
    with respect to the inputs that require grad and ``module``'s parameters."""
    args = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in inputs]
    params = [p for p in module.parameters() if p.requires_grad]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        out = fn(*args)
    flat = [o.detach() if isinstance(o, torch.Tensor) else o for o in pytree.tree_leaves(out)]
    diff = _floating_outputs(out)
    wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + params
    grads: list[Any] = []
    if diff and wrt:
        gen = torch.Generator().manual_seed(1)
        loss = sum((o * torch.randn(o.shape, generator=gen).to(o.dtype)).sum() for o in diff)
        grads = [g if g is not None else None for g in torch.autograd.grad(loss, wrt, allow_unused=True)]
    return flat, grads


def assert_same(expected: tuple[list[Any], list[Any]], actual: tuple[list[Any], list[Any]], what: str) -> None:
    (eo, eg), (ao, ag) = expected, actual
    assert len(eo) == len(ao), f"{what}: {len(ao)} outputs instead of {len(eo)}"
    for i, (e, a) in enumerate(zip(eo, ao)):
        torch.testing.assert_close(a, e, equal_nan=True, msg=lambda m, i=i: f"{what}: output {i}: {m}")
    assert len(eg) == len(ag), f"{what}: {len(ag)} gradients instead of {len(eg)}"
    for i, (e, a) in enumerate(zip(eg, ag)):
        if e is None or a is None:
            assert (e is None or not e.any()) and (a is None or not a.any()), f"{what}: gradient {i} lost"
            continue
        torch.testing.assert_close(a, e, equal_nan=True, msg=lambda m, i=i: f"{what}: gradient {i}: {m}")


def check_lint(program: Program) -> Any:
    """Lint never raises nor reports an internal rule error, and no copy finding is refuted by the
    runtime audit (``confirm=True``): each is confirmed, or not-run for a line that did not run."""
    import fxlint
    from fxlint.registry import COPY_FAMILIES

    model, inputs = program.load()
    report = fxlint.lint(model, inputs, confirm=True)
    assert not report.errors, f"internal rule errors: {report.errors}\n{program}"
    bad = [f for f in report.findings if f.code.startswith(COPY_FAMILIES) and f.status not in ("confirmed", "not-run")]
    assert not bad, "static copy findings the runtime refutes:\n" + "\n".join(
        f"  {f.code} {f.location} ({f.source}): {f.status}, predicted {f.bytes} B" for f in bad) + f"\n{program}"
    return report


def _audited(fn: Any, inputs: tuple[Any, ...], train: bool) -> int:
    import fxlint

    return fxlint.audit(fn, inputs, train=train).total_bytes


def check_rewrite(program: Program, *, backend: bool = True) -> Any:
    """Every rewrite keeps outputs and gradients equal and never increases the audited copy bytes
    (forward, and a training step). ``fxlint.rewrite`` (one graph) when the program has no graph
    break; the backend's ``rewrite`` option (every graph, inner backend ``eager``) always."""
    import fxlint
    from fxlint.errors import CaptureError, FxlintWarning

    model, inputs = program.load()
    expected = run_with_grads(model, model, inputs)
    result = None
    try:
        result = fxlint.rewrite(model, inputs)
    except CaptureError:
        pass  # a graph break: the backend below rewrites each graph
    if result is not None:
        assert_same(expected, run_with_grads(result.original, model, inputs), f"captured graph\n{program}")
        assert_same(expected, run_with_grads(result.module, model, inputs), f"rewritten graph\n{program}")
        if result.applied:
            trains = [False] + ([True] if _floating_outputs(model(*inputs)) else [])
            for train in trains:
                before = _audited(result.original, inputs, train)
                after = _audited(result.module, inputs, train)
                assert after <= before, (f"the rewrites copy more ({'training step' if train else 'forward'}): "
                                         f"{before} B before, {after} B after\n{result}\n{program}")
    if backend:
        torch._dynamo.reset()
        with warnings.catch_warnings(record=True) as caught, fxlint.collect() as session:
            warnings.simplefilter("always")
            compiled = torch.compile(model, backend="fxlint", options={"rewrite": True, "inner": "eager"})
            got = run_with_grads(compiled, model, inputs)
        torch._dynamo.reset()
        ours = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
        assert not ours, f"fxlint warned inside torch.compile: {ours}\n{program}"
        assert not session.errors, f"internal rule errors in the backend: {session.errors}\n{program}"
        rolled = [s for s in session.skipped if s.rolled_back]
        assert not rolled, f"rewrites rolled back: {[str(s) for s in rolled]}\n{program}"
        assert_same(expected, got, f"torch.compile(backend='fxlint', rewrite=True)\n{program}")
    return result
