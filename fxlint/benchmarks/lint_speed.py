"""What fxlint itself costs: analysis time against Dynamo capture and Inductor compile.

Two series:

* a transformer encoder stack scaled from 2 to 48 layers, captured by Dynamo:
  Dynamo capture time, fxlint analysis time (canonical view + every rule),
  and, for the sizes given in ``inductor_layers``, Inductor compile time;
* synthetic graphs of 1k to 20k nodes (a chain of view, index, copy, matmul
  and elementwise ops built with ``torch.fx``, values propagated with fake
  tensors): analysis time per node, which must stay flat (linear cost).

Times are medians of ``repeats`` runs with ``time.perf_counter``; the
machine line says where they were taken.
"""

from __future__ import annotations

import operator
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn


@dataclass
class StackPoint:
    layers: int
    nodes: int
    capture_s: float
    analysis_s: float
    inductor_s: float | None = None

    @property
    def analysis_share_of_inductor(self) -> float | None:
        return self.analysis_s / self.inductor_s if self.inductor_s else None


@dataclass
class SyntheticPoint:
    nodes: int
    analysis_s: float

    @property
    def us_per_node(self) -> float:
        return 1e6 * self.analysis_s / self.nodes


@dataclass
class LintSpeed:
    machine: dict[str, Any]
    stack: list[StackPoint] = field(default_factory=list)
    synthetic: list[SyntheticPoint] = field(default_factory=list)
    rules: int = 0

    def linear_fit(self) -> dict[str, float]:
        """Least-squares fit time = a + b * nodes over the synthetic series, and the
        ratio of the largest to the smallest per-node cost (1.0 = perfectly linear)."""
        pts = self.synthetic
        if len(pts) < 2:
            return {}
        xs = [p.nodes for p in pts]
        ys = [p.analysis_s for p in pts]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
        ss_tot = sum((y - my) ** 2 for y in ys) or 1e-30
        per_node = [p.us_per_node for p in pts]
        return {"intercept_s": a, "seconds_per_node": b, "r2": 1 - ss_res / ss_tot,
                "per_node_max_over_min": max(per_node) / min(per_node)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "rules": self.rules,
            "stack": [dict(asdict(p), analysis_share_of_inductor=p.analysis_share_of_inductor) for p in self.stack],
            "synthetic": [dict(asdict(p), us_per_node=p.us_per_node) for p in self.synthetic],
            "linear_fit": self.linear_fit(),
        }


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def _median_time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def analyse(views: list[Any]) -> None:
    """fxlint's analysis of already-captured graphs: every rule on every view."""
    from ..analysis.engine import run_rules
    from ..registry import RuleContext, all_rules

    run_rules(views, all_rules(), RuleContext(training=True))


def _stack(layers: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False), torch.randn(2, 16, 64)


def measure_stack(layers: int, *, repeats: int, inductor: bool) -> StackPoint:
    import torch._dynamo

    from ..capture.graphs import view_from_dynamo

    model, x = _stack(layers)
    captured: list[tuple[fx.GraphModule, list[Any]]] = []

    def record(gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        captured.append((gm, example_inputs))
        return gm.forward

    torch._dynamo.reset()
    t0 = time.perf_counter()
    torch.compile(model, backend=record)(x)
    capture_s = time.perf_counter() - t0

    def run_analysis() -> None:
        analyse([view_from_dynamo(gm, f"graph {i}") for i, (gm, _) in enumerate(captured)])

    analysis_s = _median_time(run_analysis, repeats)
    inductor_s = None
    if inductor:
        from torch._inductor.compile_fx import compile_fx

        gm, ex = captured[0]
        t0 = time.perf_counter()
        compile_fx(gm, ex)
        inductor_s = time.perf_counter() - t0
    nodes = sum(len(gm.graph.nodes) for gm, _ in captured)
    return StackPoint(layers, nodes, capture_s, analysis_s, inductor_s)


def synthetic_graph(n_nodes: int, values: str = "fake") -> fx.GraphModule:
    """A chain of ~n_nodes ops mixing views, copies, gathers, matmuls and elementwise ops.

    ``values="fake"`` propagates fake tensors (as ``fxlint.lint`` does for a GraphModule);
    ``"real"`` runs the 16x16 chain once and keeps each node's real output (the same shapes,
    strides and dtypes, built in a fraction of the time: for tests of the analysis itself)."""
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.placeholder("w")
    h = x
    block = [
        lambda h: g.call_function(torch.permute, (h, (1, 0))),
        lambda h: g.call_method("contiguous", (h,)),
        lambda h: g.call_function(torch.matmul, (h, w)),
        lambda h: g.call_function(torch.relu, (h,)),
        lambda h: g.call_function(operator.getitem, (h, (slice(None), list(range(16))))),
        lambda h: g.call_method("reshape", (h, 16, 16)),
        lambda h: g.call_function(torch.add, (h, 1.0)),
        lambda h: g.call_method("detach", (h,)),
    ]
    i = 0
    while len(g.nodes) < n_nodes - 1:
        h = block[i % len(block)](h)
        i += 1
    g.output(h)
    gm = fx.GraphModule(nn.Module(), g)
    if values == "real":
        from ..canon._fx import set_value

        class _Keep(fx.Interpreter):
            def run_node(self, n: fx.Node) -> Any:
                out = super().run_node(n)
                if isinstance(out, torch.Tensor):
                    set_value(n, out.detach())
                return out

        _Keep(gm).run(torch.randn(16, 16), torch.randn(16, 16))
        return gm
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = FakeTensorMode()
    FakeTensorProp(gm, mode).propagate(mode.from_tensor(torch.randn(16, 16)), mode.from_tensor(torch.randn(16, 16)))
    return gm


def measure_synthetic(n_nodes: int, *, repeats: int) -> SyntheticPoint:
    from ..canon import build_view

    gm = synthetic_graph(n_nodes)

    def run() -> None:
        analyse([build_view(gm, origin="fx", label="synthetic")])

    return SyntheticPoint(len(gm.graph.nodes), _median_time(run, repeats))


def run(
    layers: tuple[int, ...] = (2, 4, 8, 16, 32, 48),
    inductor_layers: tuple[int, ...] = (2, 8),
    nodes: tuple[int, ...] = (1000, 2000, 5000, 10000, 20000),
    repeats: int = 5,
    progress: Callable[[str], None] | None = None,
) -> LintSpeed:
    from ..registry import all_rules

    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    out = LintSpeed(machine=machine(), rules=len(all_rules()))
    for n in layers:
        say(f"transformer stack, {n} layers{' (+ Inductor compile)' if n in inductor_layers else ''}")
        out.stack.append(measure_stack(n, repeats=repeats, inductor=n in inductor_layers))
    for n in nodes:
        say(f"synthetic graph, {n} nodes")
        out.synthetic.append(measure_synthetic(n, repeats=repeats))
    return out


def render(result: LintSpeed) -> str:
    from tabulate import tabulate

    m = result.machine
    lines = [f"machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, python {m['python']}; "
             f"{result.rules} rules"]
    rows = []
    for p in result.stack:
        share = p.analysis_share_of_inductor
        rows.append([p.layers, p.nodes, f"{p.capture_s:.2f}", f"{1000 * p.analysis_s:.1f}",
                     f"{100 * p.analysis_s / p.capture_s:.1f}%",
                     f"{p.inductor_s:.1f}" if p.inductor_s else "-",
                     f"{100 * share:.2f}%" if share is not None else "-"])
    lines.append(tabulate(rows, headers=["layers", "nodes", "Dynamo capture s", "fxlint ms", "of capture",
                                         "Inductor s", "of Inductor"], tablefmt="github"))
    lines.append("")
    rows = [[p.nodes, f"{1000 * p.analysis_s:.1f}", f"{p.us_per_node:.1f}"] for p in result.synthetic]
    lines.append(tabulate(rows, headers=["graph nodes", "fxlint ms", "us per node"], tablefmt="github"))
    fit = result.linear_fit()
    if fit:
        lines.append(f"\nlinear fit: {1e6 * fit['seconds_per_node']:.1f} us/node, r^2 = {fit['r2']:.4f}, "
                     f"per-node cost max/min = {fit['per_node_max_over_min']:.2f}")
    return "\n".join(lines)
