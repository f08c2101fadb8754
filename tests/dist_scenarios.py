"""Scenarios the distributed tests run on every rank (``tests/dist_pool.py``).

Each function runs inside a rank of a gloo process group and returns plain data (findings as
dicts, log lines, numbers) for the test to check. The models are defined here, in a file, so that
findings point at lines of it (the tests find them by the markers in the comments).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn

import fxlint


class MLP(nn.Module):
    """Twelve layers, big enough for DDPOptimizer to split into several buckets at 1 MB."""

    def __init__(self, n: int = 12, d: int = 256, cut: int = 9) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(n))
        self.cut = cut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x))
            if i == self.cut:
                x = x.detach()  # marker: mlp detach
        return x[:, [0, 2, 4, 6]]  # marker: mlp index


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        h = h[:, [0, 2, 4, 6]].repeat(1, x.shape[1] // 4)  # marker: block index
        return x + self.b(torch.relu(h))


class Net(nn.Module):
    """An embedding step, three blocks (each sharded on its own under FSDP2) and a head."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.embed = nn.Linear(d, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(3))
        self.head = nn.Linear(d, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)[:, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]  # marker: net index
        x = self.blocks[0](x)  # marker: first block call
        x = self.blocks[1](x)
        x = self.blocks[2](x)
        return self.head(x)


class RankDependent(nn.Module):
    """Rank 1 detaches its hidden state: a gradient cut only rank 1 has."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        if dist.get_rank() == 1:
            h = h.detach()  # marker: rank-dependent detach
        return self.b(h)[:, [0, 2, 4, 6]]  # marker: rank-common index


class Records(logging.Handler):
    """The fxlint logger's records while a scenario runs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelname, record.getMessage()))

    def __enter__(self) -> "Records":
        log = logging.getLogger("fxlint")
        self._level = log.level
        log.setLevel(logging.DEBUG)
        log.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        log = logging.getLogger("fxlint")
        log.removeHandler(self)
        log.setLevel(self._level)


def _plain(findings: Any) -> list[dict[str, Any]]:
    keep = ("code", "severity", "line", "bytes", "message", "file", "ranks", "graph")
    out = []
    for f in findings:
        d = f.to_dict()
        out.append({k: d[k] for k in keep})
    return out


def _counting_inner() -> tuple[list[int], Any]:
    calls: list[int] = []

    def inner(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        calls.append(len(gm.graph.nodes))
        return gm.forward

    return calls, inner


# --------------------------------------------------------------------------- DDP


def ddp(optimize_ddp: bool) -> dict[str, Any]:
    """The MLP under DDP (bucket cap 1 MB), compiled with fxlint, one training step; the same MLP
    compiled without DDP for comparison."""
    torch._dynamo.config.optimize_ddp = optimize_ddp
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(8, 256)
    wrapped = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    calls, inner = _counting_inner()
    with Records() as rec, fxlint.collect() as session:
        out = torch.compile(wrapped, backend="fxlint", options={"inner": inner})(x)
        out.sum().backward()
    torch._dynamo.reset()
    torch._dynamo.config.optimize_ddp = True
    bare_calls, bare_inner = _counting_inner()
    with fxlint.collect() as bare:
        bare_out = torch.compile(model, backend="fxlint", options={"inner": bare_inner})(x)
    return {
        "findings": _plain(session.findings),
        "bare": _plain(bare.findings),
        "pieces": len(calls),
        "bare_graphs": len(bare_calls),
        "equal": bool(torch.equal(out, bare_out)),
        "log": rec.lines,
        "grads": sum(p.grad is not None for p in model.parameters()),
    }


# --------------------------------------------------------------------------- FSDP2


def fsdp(mode: str) -> dict[str, Any]:
    """``Net`` sharded with ``fully_shard`` per block and whole, compiled per block (torchtitan)
    or whole, one training step; the same model unsharded, compiled the same way."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model, bare_model = Net(), Net()
    bare_model.load_state_dict(model.state_dict())
    x = torch.randn(8, 16)

    def compiled(m: nn.Module, shard: bool) -> Any:
        opts = {"inner": "eager"}
        if mode == "block":
            for block in m.blocks:
                block.compile(backend="fxlint", options=opts)
                if shard:
                    fully_shard(block, mesh=mesh)
            if shard:
                fully_shard(m, mesh=mesh)
            return m
        if shard:
            for block in m.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(m, mesh=mesh)
        return torch.compile(m, backend="fxlint", options=opts)

    with Records() as rec, fxlint.collect() as session:
        out = compiled(model, True)(x)
        out.sum().backward()
    dtensor = type(next(model.parameters())).__name__
    torch._dynamo.reset()
    with fxlint.collect() as bare:
        bare_out = compiled(bare_model, False)(x)
    return {
        "findings": _plain(session.findings),
        "bare": _plain(bare.findings),
        "log": rec.lines,
        "close": bool(torch.allclose(out, bare_out, atol=1e-5)),
        "param_type": dtensor,
        "graphs": session.graphs,
    }


# --------------------------------------------------------------------------- ranks


def ranks() -> dict[str, Any]:
    """``RankDependent`` compiled under each reporting policy; ``Session.gather`` after the first."""
    out: dict[str, Any] = {}
    x = torch.randn(4, 8)
    for policy in ("first", "all", 0):
        torch._dynamo.reset()
        torch.manual_seed(0)
        with Records() as rec, fxlint.collect() as session:
            torch.compile(RankDependent(), backend="fxlint", options={"inner": "eager", "ranks": policy})(x)
        out[str(policy)] = {"log": rec.lines, "local": _plain(session.findings)}
        if policy == "first":
            gathered = session.gather(timeout=30)
            out["gathered"] = _plain(gathered.findings)
            out["rank"] = session.rank
    return out


def gather_with_a_late_rank(delay_rank: int, deadline: float) -> dict[str, Any]:
    """Every rank gathers, but ``delay_rank`` only after the others' deadline: they must not wait."""
    import time

    with fxlint.collect() as session:
        pass
    if dist.get_rank() == delay_rank:
        time.sleep(deadline + 2)
    start = time.monotonic()
    report = session.gather(timeout=deadline)
    return {"waited": time.monotonic() - start, "missing": report.extras.get("missing_ranks", []),
            "errors": report.errors}


# --------------------------------------------------------------------------- collectives


class Collectives(nn.Module):
    """Each FXL6xx positive once, next to its negative."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        world = dist.get_world_size()
        xt = x.t()
        g = torch.empty(world * xt.shape[0], xt.shape[1])
        dist.all_gather_into_tensor(g, xt)  # marker: gather of a transpose
        r = torch.empty(xt.shape[0] // world, xt.shape[1])
        dist.reduce_scatter_tensor(r, xt)  # marker: reduce_scatter of a transpose
        a = torch.empty(xt.shape)
        dist.all_to_all_single(a, xt)  # marker: all_to_all of a transpose
        ok = torch.empty(world * y.shape[0], y.shape[1])
        dist.all_gather_into_tensor(ok, y)  # marker: gather of a contiguous tensor
        dist.all_reduce(xt.contiguous())  # marker: reduce of a temporary
        kept = xt.contiguous()
        dist.all_reduce(kept)  # marker: reduce of a kept copy
        dist.all_reduce(y.contiguous())  # marker: contiguous already
        parts = [torch.empty_like(y) for _ in range(world)]
        dist.all_gather(parts, y)
        cat = torch.cat(parts)  # marker: cat of the gathered list
        return g, r, a, ok, kept, cat


def _copied_bytes(fn: Any) -> int:
    """Bytes ``aten::copy_`` wrote while ``fn`` ran (the profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    total = 0
    for e in prof.events():
        if e.name == "aten::copy_" and e.input_shapes and e.input_shapes[0]:
            n = 1
            for s in e.input_shapes[0]:
                n *= s
            total += n * 4
    return total


def _events(fn: Any, name: str) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.name == name for e in prof.events())


def collectives() -> dict[str, Any]:
    """The FXL6xx findings on ``Collectives`` (two ranks), and what the runtime does at those lines."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    x, y = torch.randn(6, 8), torch.randn(4, 6)
    report = fxlint.lint(Collectives(), (x, y), select="FXL6", config=False)
    out: dict[str, Any] = {"findings": _plain(report.findings)}

    # FXL601: the copy the functional collective makes of a transposed tensor, compiled as fxlint sees it
    def gather(t: torch.Tensor) -> torch.Tensor:
        g = torch.empty(world * t.shape[0], *t.shape[1:])
        dist.all_gather_into_tensor(g, t)
        return g

    def scatter(t: torch.Tensor) -> torch.Tensor:
        r = torch.empty(t.shape[0] // world, *t.shape[1:])
        dist.reduce_scatter_tensor(r, t)
        return r

    def to_all(t: torch.Tensor) -> torch.Tensor:
        a = torch.empty(t.shape)
        dist.all_to_all_single(a, t)
        return a

    extra = {}
    for name, fn in (("all_gather_into_tensor", gather), ("reduce_scatter_tensor", scatter),
                     ("all_to_all_single", to_all)):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        strided, dense = x.t(), x.t().contiguous()
        compiled(strided), compiled(dense)  # compile both before measuring
        extra[name] = _copied_bytes(lambda: compiled(strided)) - _copied_bytes(lambda: compiled(dense))
    out["extra_copy"] = extra

    # FXL601 error: eager gloo all_reduce of a view that is not dense
    base = torch.arange(48, dtype=torch.float32).reshape(4, 12) + 1000 * rank
    before = base.clone()
    view = base[:, ::2]
    expected = sum(torch.arange(48, dtype=torch.float32).reshape(4, 12)[:, ::2] + 1000 * r for r in range(world))
    dist.all_reduce(view)
    outside = torch.ones(4, 12, dtype=torch.bool)
    outside[:, ::2] = False
    out["eager_strided_all_reduce"] = {"correct": bool(torch.equal(view, expected)),
                                       "outside_changed": int(((base != before) & outside).sum())}

    # FXL602: the eager call really leaves the tensor unreduced; keeping the copy reduces it
    t = (torch.arange(12, dtype=torch.float32).reshape(3, 4) + 100 * rank).t()
    want = sum((torch.arange(12, dtype=torch.float32).reshape(3, 4) + 100 * r).t() for r in range(world))
    original = t.clone()
    dist.all_reduce(t.contiguous())
    kept = t.contiguous()
    dist.all_reduce(kept)
    out["temporary"] = {"unchanged": bool(torch.equal(t, original)), "kept_reduced": bool(torch.equal(kept, want))}

    # FXL603: the list form runs one aten::cat of the whole result that the tensor form does not
    def listed() -> torch.Tensor:
        parts = [torch.empty_like(y) for _ in range(world)]
        dist.all_gather(parts, y)
        return torch.cat(parts)

    def into() -> torch.Tensor:
        full = torch.empty(world * y.shape[0], y.shape[1])
        dist.all_gather_into_tensor(full, y)
        return full

    out["cat_events"] = {"list": _events(listed, "aten::cat"), "tensor": _events(into, "aten::cat"),
                         "equal": bool(torch.equal(listed(), into()))}
    out["gathered_bytes"] = world * y.numel() * y.element_size()
    return out


def sleep(seconds: float) -> None:
    """A rank that never answers in time (the pool must kill it, not wait)."""
    import time

    time.sleep(seconds)


def ddp_rewrite() -> dict[str, Any]:
    """The MLP under DDP compiled with the rewrites on: each DDP piece is rewritten on its own."""
    torch.manual_seed(0)
    model = MLP(cut=99)
    x = torch.randn(8, 256)
    wrapped = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    calls, inner = _counting_inner()
    with fxlint.collect() as session:
        out = torch.compile(wrapped, backend="fxlint", options={"inner": inner, "rewrite": True})(x)
        out.sum().backward()
    return {"pieces": len(calls), "applied": [a.code for a in session.applied],
            "skipped": [(s.code, s.reason) for s in session.skipped], "errors": session.errors,
            "equal": bool(torch.allclose(out, model(x))), "grads": sum(p.grad is not None for p in model.parameters())}
