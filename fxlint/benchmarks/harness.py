"""``fxlint bench``: original vs rewritten, eager and Inductor, inference and training step.

For each model, up to four variants are measured in the same run:

==================  =====================================================
variant             what runs
==================  =====================================================
eager               the model as written
eager+rewrite       ``fxlint.rewrite(model, inputs).module``
inductor            ``torch.compile(model)``
inductor+rewrite    ``torch.compile(model, backend="fxlint", options={"rewrite": True})``
==================  =====================================================

and for each of inference (forward under ``torch.no_grad()``) and a training
step (forward, then backward of the same scalar the audit uses; no
optimizer): median time and interquartile spread from
``torch.utils.benchmark`` (``blocked_autorange``, the variants of one model
taking turns over several rounds so that load from other processes hits them
alike), the speed ratio against the original of the same backend (the
median over rounds of the per-round ratio), bytes copied per call from the runtime audit
(for a compiled variant: the copies of the ATen ops its compiled code still calls; a
copy fused into a generated kernel is not an ATen op and shows in time and memory only),
peak memory (the profiler's allocator accounting on CPU,
``torch.cuda.max_memory_allocated`` on a GPU), compile time of compiled
variants (first call minus a steady-state call), and the largest output and
gradient difference against original eager. A variant whose results differ
beyond the dtype's tolerance is marked failed; it is never averaged away. Plain
Inductor differing from eager is PyTorch's numerics (a note, not a failure);
``inductor+rewrite`` then passes when it matches plain Inductor: the rewrite
must not change what the same compiler computes.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn as nn

from .lint_speed import machine

VARIANTS = ("eager", "eager+rewrite", "inductor", "inductor+rewrite")
_SEED = 1234
#: Inductor config for both compiled variants: random ops draw from ATen's generator as in eager
#: (else dropout differs by design and no result could be compared), low-precision casts round
#: as in eager (else a float16 round trip is computed in float32), and no FX graph cache (else
#: the second variant's compile time would be a cache hit whenever the rewrite changed nothing)
INDUCTOR_OPTIONS = {"fallback_random": True, "emulate_precision_casts": True, "fx_graph_cache": False}
RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"


@dataclass
class VariantResult:
    model: str
    variant: str
    mode: str  # infer | train
    median_s: float | None = None
    iqr_s: float | None = None
    runs: int = 0
    ratio: float | None = None  # original median / this median, same backend (>1: faster)
    #: the spread of that ratio over the interleaved rounds (quartiles; min and max under four rounds)
    ratio_lo: float | None = None
    ratio_hi: float | None = None
    copied_bytes: int | None = None
    peak_bytes: int | None = None
    compile_s: float | None = None
    max_out_diff: float | None = None
    max_grad_diff: float | None = None
    correct: bool = True
    rewrites: list[str] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None  # why nothing was measured (not a failure)
    note: str | None = None  # what the check found that is not a failure (Inductor's own numerics)

    @property
    def backend(self) -> str:
        return self.variant.split("+")[0]

    @property
    def within_noise(self) -> bool:
        """A rewritten variant whose speed ratio cannot be told from 1.00x: its spread over the rounds
        holds 1.00x (the timing noise of this machine is as large as the difference)."""
        return (self.variant != self.backend and self.ratio_lo is not None and self.ratio_hi is not None
                and self.ratio_lo <= 1.0 <= self.ratio_hi)

    def ratio_text(self) -> str:
        """``1.87x``, or ``1.02x (noise: 0.91-1.13x)`` when the spread holds 1.00x."""
        if not self.ratio:
            return "-"
        if self.within_noise:
            return f"{self.ratio:.2f}x (noise: {self.ratio_lo:.2f}-{self.ratio_hi:.2f}x)"
        return f"{self.ratio:.2f}x"


@dataclass
class BenchResult:
    machine: dict[str, Any]
    results: list[VariantResult] = field(default_factory=list)

    @property
    def failures(self) -> list[VariantResult]:
        return [r for r in self.results if not r.correct or r.error]

    def to_dict(self) -> dict[str, Any]:
        return {"machine": self.machine, "results": [asdict(r) for r in self.results],
                "failures": len(self.failures)}


# --------------------------------------------------------------------------- helpers


def _tensors(x: Any) -> list[torch.Tensor]:
    from ..capture.graphs import tensors_in

    return tensors_in(x)


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1e-4, 1e-5
    if dtype.is_floating_point or dtype.is_complex:
        return 1e-7, 1e-9
    return 0.0, 0.0


def _max_diff(a: Sequence[torch.Tensor | None], b: Sequence[torch.Tensor | None]) -> tuple[float, bool]:
    """(largest absolute difference, within tolerance?) of two lists of tensors.

    Within tolerance: ``max|x - y| <= atol + rtol * max|y|`` per tensor, with the dtype's
    tolerances (a compiled kernel sums in another order: its error scales with the largest
    value, not with each element). A missing gradient equals an all-zero one (AOTAutograd
    returns zeros for a parameter whose gradient eager leaves as None)."""
    if len(a) != len(b):
        return math.inf, False
    worst, ok = 0.0, True
    for x, y in zip(a, b):
        if x is None or y is None:
            other = y if x is None else x
            if other is not None and bool(other.detach().count_nonzero() != 0):
                return math.inf, False
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return math.inf, False
        if x.numel() == 0:
            continue
        xd, yd = x.detach(), y.detach()
        if xd.dtype.is_floating_point or xd.dtype.is_complex:
            wide = torch.complex128 if xd.is_complex() else torch.float64
            xw, yw = xd.to(wide), yd.to(wide)
            d = (xw - yw).abs().nan_to_num(nan=0.0).max().item()
            rtol, atol = _tolerance(xd.dtype)
            scale = yw.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max().item()
            same_nans = bool(torch.equal(xw.isnan(), yw.isnan()))
            if not same_nans or d > atol + rtol * scale:
                ok = False
        else:
            d = float((xd != yd).sum().item())
            ok = ok and d == 0
        worst = max(worst, d)
    return worst, ok


class _Step:
    """One inference call or one training step of a variant, with its loss weights fixed."""

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, train: bool,
                 params: Sequence[torch.Tensor], weights: dict[int, torch.Tensor]) -> None:
        self.fn, self.args, self.kwargs, self.train = fn, args, kwargs, train
        self.params = params
        self.weights = weights

    def __call__(self) -> Any:
        if not self.train:
            with torch.no_grad():
                return self.fn(*self.args, **self.kwargs)
        from ..runtime import training_loss

        out = self.fn(*self.args, **self.kwargs)
        loss = training_loss(out, self.weights)  # the audit's loss: dense gradients, no copies of its own
        if loss is not None:
            loss.backward()
        return out

    def grads(self) -> list[torch.Tensor | None]:
        return [p.grad.detach().clone() if p.grad is not None else None for p in self.params]

    def zero(self) -> None:
        for p in self.params:
            p.grad = None


# --------------------------------------------------------------------------- measurements


def _timer(step: _Step) -> Any:
    from torch.utils.benchmark import Timer

    def stmt() -> None:
        step()
        step.zero()

    return Timer(stmt="stmt()", globals={"stmt": stmt}, num_threads=torch.get_num_threads())


def _time_interleaved(steps: list[_Step], min_run_time: float, rounds: int) -> list[list[Any]]:
    """``blocked_autorange`` measurements of every step, ``rounds`` times, the variants taking
    turns in each round: load from other processes then hits all variants alike, and ratios
    are taken round by round (see ``_ratio``)."""
    timers = [_timer(s) for s in steps]
    out: list[list[Any]] = [[] for _ in steps]
    for _ in range(rounds):
        for i, t in enumerate(timers):
            out[i].append(t.blocked_autorange(min_run_time=min_run_time / rounds))
    return out


def _ratio(base: list[Any], mine: list[Any]) -> float:
    """Median over rounds of (baseline median / this median)."""
    return statistics.median(b.median / m.median for b, m in zip(base, mine))


def _ratio_spread(base: list[Any], mine: list[Any]) -> tuple[float, float]:
    """The quartiles of the per-round ratios (their min and max under four rounds)."""
    rs = sorted(b.median / m.median for b, m in zip(base, mine))
    if len(rs) >= 4:
        q = statistics.quantiles(rs, n=4)
        return q[0], q[2]
    return rs[0], rs[-1]


def _peak_bytes(step: _Step) -> int | None:
    if torch.cuda.is_available() and any(t.is_cuda for t in _tensors((step.args, step.kwargs))):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step()
        step.zero()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    import gc

    from torch.profiler import ProfilerActivity, profile

    gc.collect()  # garbage of earlier calls freed inside the window would read as negative use
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
        step.zero()
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    events = []
    while stack:
        e = stack.pop()
        stack.extend(e.children)
        if type(e.extra_fields).__name__ == "_ExtraFields_Allocation":
            events.append((e.start_time_ns, e.extra_fields.ptr, e.extra_fields.alloc_size))
    # only memory allocated inside the call counts: a free of an older block (the previous call's
    # output, a gradient reset) would lower the running total below the call's real use
    live: dict[int, int] = {}
    cur = peak = 0
    for _, ptr, size in sorted(events):
        if size > 0:
            live[ptr] = live.get(ptr, 0) + size
            cur += size
        elif ptr in live:
            cur -= live.pop(ptr)
        peak = max(peak, cur)
    return peak


class _AsIs(nn.Module):
    """A variant's callable as a module the audit runs as it is: the audit unwraps a
    ``torch.compile``'d module to its eager original, which is not what a compiled variant
    copies. It holds the model, so a training step's gradients are reset as for eager."""

    _fn: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], model: nn.Module) -> None:
        super().__init__()
        self.model = model
        object.__setattr__(self, "_fn", fn)  # not a submodule: parameters() is the model's, once

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


def _copied_bytes(fn: Callable[..., Any], model: nn.Module, args: tuple, kwargs: dict, train: bool,
                  compiled: bool) -> int:
    """Bytes per call the audit records. For a compiled variant these are the copies made by the
    ATen ops its compiled code still calls (library kernels, fallbacks); a copy fused into a
    generated kernel is no ATen op, and shows only in time and peak memory."""
    from ..runtime import audit

    inputs = kwargs if kwargs and not args else args
    target = _AsIs(fn, model) if compiled else fn
    with torch.set_grad_enabled(train):  # the grad mode the variant was compiled and timed in
        return audit(target, inputs, train=train, attribute=not compiled).total_bytes


# --------------------------------------------------------------------------- the run


def _variants(model: nn.Module, inputs: Any, backends: Iterable[str], rewrite_fn: Callable[..., Any] | None,
              compiler: str = "inductor") -> list[tuple[str, Callable[[], tuple[Callable[..., Any], list[str]]]]]:
    """(name, factory) for each variant; a factory builds the callable lazily (compiles are slow).
    ``rewrite_fn`` None: the names only (the factory of the eager rewrite must not be called).
    ``compiler``: the torch.compile backend of the compiled variants (``"inductor"``; the suite
    checks the variant selection with ``"aot_eager"``, which compiles in a fraction of the time).

    The order is the order they are built and first run in: the two variants fxlint has no hand in
    (eager, inductor) first, so that a failure of the plain compile is PyTorch's alone, never the
    trace of an fxlint variant built before it."""
    out: list[tuple[str, Callable[[], tuple[Callable[..., Any], list[str]]]]] = []
    backends = list(backends)
    options = dict(INDUCTOR_OPTIONS) if compiler == "inductor" else {}
    if "eager" in backends:
        out.append(("eager", lambda: (model, [])))
    if "inductor" in backends:
        def plain() -> tuple[Callable[..., Any], list[str]]:
            if compiler == "inductor":
                return torch.compile(model, options=dict(options)), []
            return torch.compile(model, backend=compiler), []

        out.append(("inductor", plain))
    if "eager" in backends:
        def rewritten() -> tuple[Callable[..., Any], list[str]]:
            assert rewrite_fn is not None
            res = rewrite_fn(model, inputs)
            return res.module, [f"{a.code} {a.location}" if hasattr(a, "location") else str(a) for a in res.applied]

        out.append(("eager+rewrite", rewritten))
    if "inductor" in backends:
        def compiled_rewrite() -> tuple[Callable[..., Any], list[str]]:
            inner = {} if compiler == "inductor" else {"inner": compiler}
            return torch.compile(model, backend="fxlint", options={"rewrite": True, **inner, **options}), []

        out.append(("inductor+rewrite", compiled_rewrite))
    return out


def _skip_reason(variant: str, exc: BaseException, done: Sequence[VariantResult]) -> str | None:
    """Why a variant that raised is skipped rather than failed, or None (it failed).

    Not fxlint's: the plain compile (``torch.compile(model)``, built before any fxlint variant)
    failing, the fxlint-compiled variant failing where the plain compile failed too, and a
    whole-model rewrite of a model with graph breaks (``fxlint.rewrite`` needs one graph; the
    backend rewrites each graph, which the inductor+rewrite row measures)."""
    from ..errors import GraphBreakError, first_line

    if variant == "eager+rewrite" and isinstance(exc, GraphBreakError):
        return ("graph breaks: no single graph for fxlint.rewrite (the backend rewrites each graph: "
                "the inductor+rewrite row)")
    if variant == "inductor":
        return f"torch.compile itself fails on this model ({type(exc).__name__}: {first_line(exc)})"
    if variant == "inductor+rewrite" and any(r.variant == "inductor" and r.skipped for r in done):
        return "torch.compile itself fails on this model (see the inductor row)"
    return None


def bench_model(name: str, model: nn.Module, inputs: Any, *, modes: Iterable[str], backends: Iterable[str],
                min_run_time: float = 1.0, rounds: int = 5, say: Callable[[str], None] | None = None,
                measure: bool = True, compiler: str = "inductor") -> list[VariantResult]:
    """Every variant of one model, per mode. ``measure`` False: build each variant, run it once and
    compare its results (the selection: ok, failed or skipped with its reason), without the timing
    loop and the audit. Results come in ``VARIANTS`` order."""
    import fxlint

    from ..capture.graphs import normalise_inputs, preserved_state, require_tensor_output
    from ..errors import ModelError

    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    args, kwargs = normalise_inputs(inputs)
    params = [p for p in model.parameters() if p.requires_grad]
    results: list[VariantResult] = []
    with preserved_state(model):
        for mode in modes:
            train = mode == "train"
            what = "training step" if train else "inference"
            weights: dict[int, torch.Tensor] = {}
            ref = _Step(model, args, kwargs, train, params, weights)
            try:
                torch.manual_seed(_SEED)  # dropout & co.: every variant's checked call draws the same numbers
                returned = ref()
            except ModelError:
                raise
            except Exception as exc:  # the user's model: one line in the CLI, not an internal error
                from ..capture.model_errors import model_error

                raise model_error(exc) from exc
            require_tensor_output(returned)
            ref_out = [t.detach().clone() for t in _tensors(returned)]
            ref_grads = ref.grads()
            ref.zero()
            live: list[tuple[VariantResult, _Step, float]] = []
            built: list[VariantResult] = []
            compiled_ref: tuple[list[torch.Tensor], list[torch.Tensor | None]] | None = None
            for variant, factory in _variants(model, inputs, backends, fxlint.rewrite, compiler):
                say(f"{name}: building {variant} ({what})")
                r = VariantResult(model=name, variant=variant, mode=mode)
                built.append(r)
                try:
                    fn, r.rewrites = factory()
                    step = _Step(fn, args, kwargs, train, params, weights)
                    torch.manual_seed(_SEED)
                    t0 = time.perf_counter()
                    out = [t.detach().clone() for t in _tensors(step())]  # compiles, for compiled variants
                    first_s = time.perf_counter() - t0
                    grads = step.grads()
                    step.zero()
                    r.max_out_diff, ok_out = _max_diff(out, ref_out)
                    ok_grad = True
                    if train:
                        r.max_grad_diff, ok_grad = _max_diff(grads, ref_grads)
                    r.correct = ok_out and ok_grad
                    if variant == "inductor":
                        compiled_ref = (out, grads)
                        if not r.correct:  # Inductor's own numerics (another summation order, layout): PyTorch's
                            r.correct = True
                            r.note = ("Inductor's own results differ from eager beyond the dtype's tolerance "
                                      "(PyTorch's numerics, not fxlint's); inductor+rewrite is checked against it")
                    elif variant == "inductor+rewrite" and not r.correct and compiled_ref is not None:
                        # the rewrite must not change what the same compiler computes
                        ok_out = _max_diff(out, compiled_ref[0])[1]
                        ok_grad = not train or _max_diff(grads, compiled_ref[1])[1]
                        r.correct = ok_out and ok_grad
                    live.append((r, step, first_s))
                except Exception as exc:  # noqa: BLE001 - one broken variant must not hide the others
                    r.skipped = _skip_reason(variant, exc, built)
                    if r.skipped is None:
                        r.error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
                        r.correct = False
            results.extend(sorted(built, key=lambda r: VARIANTS.index(r.variant)))
            if not live or not measure:
                continue
            live.sort(key=lambda x: VARIANTS.index(x[0].variant))
            say(f"{name}: timing {len(live)} variants ({what}), {rounds} interleaved rounds")
            measured = _time_interleaved([st for _, st, _ in live], min_run_time * len(live), rounds)
            by_variant = {r.variant: m for (r, _, _), m in zip(live, measured)}
            for (r, step, first_s), ms in zip(live, measured):
                times = [t for m in ms for t in m.times]
                q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
                r.median_s, r.iqr_s, r.runs = statistics.median(times), q[2] - q[0], len(times)
                base = by_variant.get(r.backend)
                r.ratio = _ratio(base, ms) if base is not None else None
                if base is not None:
                    r.ratio_lo, r.ratio_hi = _ratio_spread(base, ms)
                if r.variant.startswith("inductor"):
                    r.compile_s = max(first_s - r.median_s, 0.0)
                try:
                    say(f"{name}: auditing {r.variant} ({what})")
                    r.copied_bytes = _copied_bytes(step.fn, model, args, kwargs, train,
                                                    compiled=r.backend != "eager")
                    r.peak_bytes = _peak_bytes(step)
                except Exception as exc:  # noqa: BLE001
                    r.error = f"audit failed: {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    return results


def steps_per_model(modes: list[str], backends: list[str]) -> int:
    """Progress steps one model takes: per mode, building and auditing each variant, and timing."""
    variants = 2 * len(backends)  # original and rewritten, per backend
    return len(modes) * (2 * variants + 1)


def run(models: list[tuple[str, nn.Module, Any]], *, modes: Iterable[str], backends: Iterable[str],
        min_run_time: float = 1.0, rounds: int = 5, say: Callable[[str], None] | None = None) -> BenchResult:
    """Benchmark every model. Progress goes to ``say`` (default: a progress bar with the time left
    on a terminal, one line per step otherwise)."""
    from ..util.progress import Progress

    result = BenchResult(machine=machine())
    modes, backends = list(modes), list(backends)
    per = steps_per_model(modes, backends)
    progress = Progress(per * len(models)) if say is None else None
    step = progress.step if progress is not None else say
    assert step is not None
    for i, (name, model, inputs) in enumerate(models, 1):
        devices = {t.device.type for t in (*_tensors(inputs), *model.parameters(), *model.buffers())}
        if "meta" in devices:
            # a scenario that stands in a device with the meta device (no GPU here) computes
            # nothing: there is no time to measure and no value to compare
            why = "runs on the meta device (a stand-in for a GPU on this machine): nothing to time"
            names = {v for v, _ in _variants(model, inputs, backends, None)}
            result.results.extend(VariantResult(model=name, variant=v, mode=m, skipped=why)
                                  for m in modes for v in VARIANTS if v in names)
            if progress is not None:
                progress.advance(per)
            continue
        def say_model(m: str, _i: int = i) -> None:
            step(f"model {_i}/{len(models)}: {m}")

        result.results.extend(bench_model(name, model, inputs, modes=modes, backends=backends,
                                          min_run_time=min_run_time, rounds=rounds, say=say_model))
    if progress is not None:
        progress.close(f"{len(models)} model{'s' if len(models) != 1 else ''} benchmarked")
    return result


# --------------------------------------------------------------------------- rendering


def _fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s"


def render_table(result: BenchResult, *, color: bool | None = None) -> str:
    from tabulate import tabulate

    from ..tensor.info import human_bytes

    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR") if color is None else color
    rows = []
    for r in result.results:
        status = "ok" if r.correct and not r.error else ("FAILED: " + (r.error or "results differ"))
        if r.note and status == "ok":
            status = f"ok ({r.note})"
        if r.skipped:
            status = f"skipped: {r.skipped}"
        elif color:
            status = f"{GREEN if status.startswith('ok') else RED}{status}{RESET}"
        spread = f"±{100 * r.iqr_s / r.median_s:.0f}%" if r.median_s and r.iqr_s is not None else "-"
        rows.append([
            r.model, r.mode, r.variant, _fmt_time(r.median_s), spread,
            r.ratio_text(),
            human_bytes(r.copied_bytes) if r.copied_bytes is not None else "-",
            human_bytes(r.peak_bytes) if r.peak_bytes is not None else "-",
            f"{r.compile_s:.1f} s" if r.compile_s is not None else "-",
            "-" if r.max_out_diff is None else f"{r.max_out_diff:.1e}",
            "-" if r.max_grad_diff is None else f"{r.max_grad_diff:.1e}",
            status,
        ])
    m = result.machine
    head = (f"machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}"
            + (f", GPU {m['cuda']}" if m.get("cuda") else ""))
    table = tabulate(rows, headers=["model", "mode", "variant", "median", "IQR", "speed vs orig", "copied/call",
                                    "peak mem", "compile", "max out diff", "max grad diff", "check"],
                     tablefmt="github")
    return head + "\n\n" + table


def plot(result: BenchResult, path: str) -> None:
    """Two panels side by side, one row per model and mode, one bar per variant: the speed ratio
    against the original of the same backend, and the bytes the audit saw copied per call.
    A failed variant is a red FAILED label; a skipped model says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from ..tensor.info import human_bytes

    keys = sorted({(r.model, r.mode) for r in result.results}, reverse=True)  # first model on top
    variants = [v for v in VARIANTS if any(r.variant == v for r in result.results)]
    found = {(r.model, r.mode, r.variant): r for r in result.results}
    height = 0.8 / max(1, len(variants))
    fig, (speed, copied) = plt.subplots(1, 2, sharey=True, constrained_layout=True,
                                        figsize=(13, max(3.0, 0.22 * len(keys) * max(2, len(variants)) + 1.2)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for vi, v in enumerate(variants):
        ys = [i + (len(variants) - 1 - vi) * height for i in range(len(keys))]
        rows = [found.get((m, mode, v)) for m, mode in keys]
        ok = [r is not None and r.correct and not r.error and r.ratio is not None for r in rows]
        ratios = [(r.ratio or 0.0) if good and r is not None else 0.0 for r, good in zip(rows, ok)]
        speed.barh(ys, ratios, height, label=v, color=colors[vi % len(colors)])
        copied.barh(ys, [(r.copied_bytes or 0) if r is not None else 0 for r in rows], height, label=v,
                    color=colors[vi % len(colors)])
        for y, r, good in zip(ys, rows, ok):
            if r is not None and r.skipped:
                why = r.skipped if len(r.skipped) <= 60 else r.skipped[:57] + "..."
                speed.text(0.02, y, f"{v} skipped: {why}", va="center", fontsize=6, color="grey")
            elif r is not None and not good:
                speed.text(0.02, y, "FAILED", color="red", va="center", fontsize=7, fontweight="bold")
    speed.set_yticks([i + 0.4 - height / 2 for i in range(len(keys))])
    speed.set_yticklabels([f"{m} ({mode})" for m, mode in keys], fontsize=8)
    speed.axvline(1.0, color="grey", lw=0.8, ls="--")
    speed.set_xlabel("speed vs the original of the same backend (x, right of 1 is faster)")
    speed.set_title("speed ratio", fontsize=10)
    copied.set_xscale("symlog", linthresh=1e3)
    copied.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human_bytes(int(x)) if x > 0 else "0"))
    copied.set_xlabel("bytes copied per call (runtime audit; log scale)")
    copied.set_title("copied bytes", fontsize=10)
    for ax in (speed, copied):
        ax.grid(axis="x", lw=0.3)
        ax.set_ylim(-0.3, len(keys))
    speed.legend(fontsize=8, loc="lower right")
    machine = result.machine
    fig.suptitle(f"fxlint bench: {machine['cpu']}, {machine['threads']} threads, torch {machine['torch']}",
                 fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)

