"""Ask the machine: run one op on random tensors of the same geometry under the profiler, and
fill the parts of a prediction that depend on this CPU.

The stride model ports ATen's decisions, reading the CPU facts they read
(``Env``: oneDNN's bfloat16/float16 support, the CPU's AVX512/AMX features).
What a backend library then does with these strides on *this* CPU - oneDNN's
reorders into and out of its blocked layouts, which differ between AMX, AVX512,
AVX2 and SSE4.1 builds of the same kernel - the model cannot know; it marks
those parts ``Unknown(machine=True)``. Where probing is on, ``resolve``
answers them:

1. ``OpCall`` (attached to the prediction by the kernel model) says how to run
   the op: its operands' sizes, strides, dtypes and ``requires_grad``, its
   arguments, and whether it trains.
2. ``measure`` builds random tensors with exactly those strides (a fresh
   storage of the right extent, viewed with the strides), runs the op once to
   warm oneDNN's primitive cache, then once more - and its backward with a
   gradient in the output's own layout, when it trains - under
   ``torch.profiler`` (``fxlint.runtime.profiler.profile_copies``, the
   audit's engine), and attributes each copy to an operand by its shape.
3. ``resolve`` keeps the model's copies the machine made, adds the ones it
   made beyond them ("measured on this machine", ``KernelCopy.source ==
   MEASURED``), drops any it did not make, and clears the unknown parts.

The answer is cached per (op, sizes, strides, dtypes, arguments, training) and
machine (torch version, ATen's CPU capability, oneDNN's ISA cap, the oneDNN
flags, thread count, CPU model): in memory for the process and on disk in
``$FXLINT_CACHE_DIR`` (default ``~/.cache/fxlint``), ``probes-<torch>.json``.
A corrupt or unwritable cache file is no cache, never an error.

Cost: each new geometry runs the op twice (forward, and backward when
training) with the profiler on, a few to tens of milliseconds for the sizes
of a typical layer, and allocates its operands, output and gradients: about
twice (inference) or three times (training) their bytes. An op whose estimate
exceeds ``max_mib`` (default 256 MiB) is not run, nor anything once a run
has spent ``time_budget_s`` (default 30 s) probing: those parts stay
unknown, and say why.

Where it runs: ``fxlint.lint`` and ``fxlint lint`` probe by default
(``probe=False`` / ``--no-probe`` / ``probe = false`` in ``[tool.fxlint]``;
``probe-max-mib`` sets the budget); the compile backend only with
``options={"probe": True}``, since running ops while compiling would be
surprising. Everything else (``predict`` outside those, the rules' own
tests) probes only inside ``with probing():``.

A probe that fails - the op raises on random data, memory runs out, the CPU
lacks the dtype, the output does not have the expected shape, a profiler is
already running - leaves the parts unknown and says why; it never raises and
never claims a copy it did not see.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import platform
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from .env import Env
from .results import MEASURED, KernelCopy, KernelPrediction

__all__ = [
    "DEFAULT_MAX_MIB",
    "DEFAULT_TIME_BUDGET_S",
    "MeasuredCopy",
    "Measurement",
    "OpCall",
    "Operand",
    "ProbeSettings",
    "ProbeStats",
    "attribute",
    "cache_path",
    "clear_memory_cache",
    "current_settings",
    "current_stats",
    "machine_key",
    "measure",
    "probing",
    "record_copies",
    "resolve",
    "runner",
]

DEFAULT_MAX_MIB = 256
DEFAULT_TIME_BUDGET_S = 30.0
#: bumped when the meaning of a cached answer changes
CACHE_FORMAT = 1
#: entries kept in the disk cache (the oldest go first)
CACHE_MAX_ENTRIES = 20_000


# --------------------------------------------------------------------------- what to run


@dataclass(frozen=True)
class Operand:
    """One tensor operand of a probed call: its geometry, dtype and whether it requires grad."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # "float32", "bfloat16", ...
    requires_grad: bool = False

    @classmethod
    def of(cls, name: str, t: Any, requires_grad: bool | None = None) -> Operand:
        """From a ``TensorInfo``; ``TypeError`` when a size or stride is symbolic."""
        shape, stride = tuple(t.shape), tuple(t.stride)
        if len(shape) != len(stride) or not all(type(v) is int for v in (*shape, *stride)):
            raise TypeError("symbolic or missing sizes")
        rg = bool(t.requires_grad) if requires_grad is None else bool(requires_grad)
        return cls(name, shape, stride, str(t.dtype).replace("torch.", ""), rg)

    @classmethod
    def dense(cls, name: str, shape: Sequence[Any], dtype: torch.dtype, requires_grad: bool = False) -> Operand:
        if not all(type(v) is int for v in shape):
            raise TypeError("symbolic sizes")
        st, cur = [0] * len(shape), 1
        for d in reversed(range(len(shape))):
            st[d] = cur
            cur *= max(int(shape[d]), 1)
        return cls(name, tuple(int(s) for s in shape), tuple(st), str(dtype).replace("torch.", ""),
                   bool(requires_grad))

    @property
    def torch_dtype(self) -> torch.dtype:
        dt = getattr(torch, self.dtype, None)
        if not isinstance(dt, torch.dtype):
            raise TypeError(f"unknown dtype {self.dtype!r}")
        return dt

    def storage_elements(self) -> int:
        """Elements of the smallest storage that holds every element the strides reach."""
        if any(s == 0 for s in self.shape):
            return 0
        return 1 + sum((s - 1) * abs(st) for s, st in zip(self.shape, self.stride))

    def storage_bytes(self) -> int:
        return self.storage_elements() * torch.empty((), dtype=self.torch_dtype).element_size()


@dataclass(frozen=True)
class OpCall:
    """How to run one kernel call for a probe: the runner ``op`` (see ``runner``), its tensor
    operands, its other arguments (hashable, JSON-able), whether it trains (runs its backward with
    a gradient in the output's layout), and the output shapes the graph expects (empty: not
    known; a probe whose output differs is discarded)."""

    op: str
    operands: tuple[Operand, ...]
    args: tuple[tuple[str, Any], ...] = ()
    train: bool = False
    outputs: tuple[tuple[int, ...], ...] = ()

    def key(self) -> dict[str, Any]:
        return {"op": self.op, "train": self.train, "args": [[k, _jsonable(v)] for k, v in self.args],
                "operands": [[o.name, list(o.shape), list(o.stride), o.dtype, o.requires_grad] for o in self.operands]}

    def estimate_bytes(self) -> int:
        """What running it allocates, about: operands and outputs, twice when it trains (their
        gradients), plus one more of each for the copies and workspaces the kernel makes."""
        tensors = sum(o.storage_bytes() for o in self.operands)
        itemsize = max((torch.empty((), dtype=o.torch_dtype).element_size() for o in self.operands), default=4)
        outs = sum(_numel(s) * itemsize for s in self.outputs) or max((o.storage_bytes() for o in self.operands),
                                                                        default=0)
        return (tensors + outs) * (3 if self.train else 2)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


def _numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


#: runner name -> ``fn(tensors: dict[str, Tensor], **args) -> Tensor``
RUNNERS: dict[str, Callable[..., torch.Tensor]] = {}


def runner(name: str) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    """Register how to run the op ``OpCall.op == name`` (a kernel module registers its own)."""

    def register(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        RUNNERS[name] = fn
        return fn

    return register


# --------------------------------------------------------------------------- settings for a run


@dataclass(frozen=True)
class ProbeSettings:
    """Whether predictions are resolved on the machine, and within what budget."""

    enabled: bool = False
    max_mib: float = DEFAULT_MAX_MIB  # skip a call whose allocations are estimated above this
    time_budget_s: float = DEFAULT_TIME_BUDGET_S  # stop probing once a run has spent this long
    cache_dir: str | None = None  # None: $FXLINT_CACHE_DIR, else ~/.cache/fxlint; "": no disk cache


@dataclass
class ProbeStats:
    """What probing did in one run (``fxlint.lint`` puts ``describe()`` in ``Report.extras["probe"]``)."""

    measured: int = 0  # ops run under the profiler
    cached: int = 0  # answers from the cache
    skipped: int = 0  # over the size or time budget
    failed: int = 0  # the op or the profiler raised, or the output was not the expected one
    seconds: float = 0.0  # time spent measuring
    reasons: list[str] = field(default_factory=list)  # why each skipped or failed probe gave nothing

    def describe(self) -> dict[str, Any]:
        return {"measured": self.measured, "cached": self.cached, "skipped": self.skipped, "failed": self.failed,
                "seconds": round(self.seconds, 3), "reasons": list(dict.fromkeys(self.reasons))[:10]}


_SETTINGS: contextvars.ContextVar[ProbeSettings] = contextvars.ContextVar("fxlint_probe_settings",
                                                                          default=ProbeSettings())  # noqa: B039 - frozen
_STATS: contextvars.ContextVar[ProbeStats | None] = contextvars.ContextVar("fxlint_probe_stats", default=None)


def current_settings() -> ProbeSettings:
    return _SETTINGS.get()


def current_stats() -> ProbeStats | None:
    return _STATS.get()


@contextlib.contextmanager
def probing(enabled: bool = True, *, max_mib: float | None = None, time_budget_s: float | None = None,
            cache_dir: str | None = None) -> Iterator[ProbeStats]:
    """Within the block, ``predict`` (``fxlint.kernels.predict``) resolves machine-dependent parts by
    running the op (``enabled=False``: it does not); yields the run's ``ProbeStats``."""
    base = _SETTINGS.get()
    s = ProbeSettings(enabled=bool(enabled), max_mib=base.max_mib if max_mib is None else float(max_mib),
                      time_budget_s=base.time_budget_s if time_budget_s is None else float(time_budget_s),
                      cache_dir=base.cache_dir if cache_dir is None else cache_dir)
    stats = ProbeStats()
    t1, t2 = _SETTINGS.set(s), _STATS.set(stats)
    try:
        yield stats
    finally:
        _SETTINGS.reset(t1)
        _STATS.reset(t2)


# --------------------------------------------------------------------------- the machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key(env: Env | None = None) -> dict[str, Any]:
    """What decides a probe's answer besides the call: the build and the CPU code that runs."""
    env = env or Env.current()
    return {"torch": torch.__version__, "cpu_capability": env.cpu_capability, "onednn_isa": env.onednn_isa,
            "mkldnn": env.mkldnn, "mkldnn_bf16": env.mkldnn_bf16, "mkldnn_fp16": env.mkldnn_fp16,
            "mkldnn_fp32_matmul": env.mkldnn_fp32_matmul, "threads": env.num_threads, "cpu": _CPU_MODEL,
            # a virtual machine may name two CPU generations alike ("AMD EPYC"): their features tell them apart
            "cpu_features": env.cpu_features,
            "machine": platform.machine(), "format": CACHE_FORMAT}


_CPU_MODEL = _cpu_model()


# --------------------------------------------------------------------------- the cache


def cache_dir(settings: ProbeSettings | None = None) -> Path | None:
    """Where the probe cache lives (None: no disk cache)."""
    s = settings or current_settings()
    if s.cache_dir is not None:
        return Path(s.cache_dir).expanduser() if s.cache_dir else None
    env = os.environ.get("FXLINT_CACHE_DIR")
    if env is not None:
        return Path(env).expanduser() if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fxlint"


def cache_path(settings: ProbeSettings | None = None) -> Path | None:
    d = cache_dir(settings)
    return None if d is None else d / f"probes-{torch.__version__.replace('+', '_')}.json"


#: key digest -> answer, for this process (filled from the disk file on first use)
_MEMORY: dict[str, dict[str, Any]] = {}
_LOADED: set[str] = set()


def clear_memory_cache() -> None:
    """Forget what this process measured or read (tests; the disk file stays)."""
    _MEMORY.clear()
    _LOADED.clear()


def _read_file(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of the cache file; {} when it is missing, unreadable or not ours."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return {k: v for k, v in data["entries"].items() if isinstance(v, dict) and isinstance(v.get("copies"), list)}


def _load(path: Path | None) -> None:
    if path is None or str(path) in _LOADED:
        return
    _LOADED.add(str(path))
    for k, v in _read_file(path).items():
        _MEMORY.setdefault(k, v)


def _write(path: Path | None, digest: str, entry: dict[str, Any]) -> None:
    """Add one entry to the file (merging with what other processes wrote); any error: no cache."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        entries = _read_file(path)
        entries[digest] = entry
        if len(entries) > CACHE_MAX_ENTRIES:
            for k in sorted(entries, key=lambda k: entries[k].get("at", 0))[: len(entries) - CACHE_MAX_ENTRIES]:
                del entries[k]
        fd, tmp = tempfile.mkstemp(prefix=".probes-", suffix=".json", dir=str(path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": CACHE_FORMAT, "torch": torch.__version__, "entries": entries}, fh)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, TypeError, ValueError):
        pass  # an unwritable cache is no cache


def cache_summary(settings: ProbeSettings | None = None) -> dict[str, Any]:
    """Where the cache file is, whether it exists, its size and entry count (``fxlint env``)."""
    path = cache_path(settings)
    if path is None:
        return {"path": None, "exists": False, "bytes": 0, "entries": 0}
    exists = path.is_file()
    return {"path": str(path), "exists": exists, "bytes": path.stat().st_size if exists else 0,
            "entries": len(_read_file(path)) if exists else 0}


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class MeasuredCopy:
    """One copy the probe saw: phase, bytes, the op that asked for it, its shape and dtype, and the
    operands whose shape it has (empty: none; several: their shapes are equal)."""

    phase: str
    nbytes: int
    op: str
    shape: tuple[int, ...]
    dtype: str
    operands: tuple[str, ...] = ()
    avoidable: bool = True

    def to_json(self) -> list[Any]:
        return [self.phase, self.nbytes, self.op, list(self.shape), self.dtype, list(self.operands), self.avoidable]

    @classmethod
    def from_json(cls, v: Sequence[Any]) -> MeasuredCopy:
        return cls(str(v[0]), int(v[1]), str(v[2]), tuple(int(s) for s in v[3]), str(v[4]),
                   tuple(str(o) for o in v[5]), bool(v[6]))


@dataclass(frozen=True)
class Measurement:
    """A probe's answer: ``ok`` with the copies it saw, or not (``why`` says why)."""

    ok: bool
    copies: tuple[MeasuredCopy, ...] = ()
    why: str = ""
    seconds: float = 0.0
    cached: bool = False


def record_copies(step: Callable[[], Any]) -> list[Any]:
    """Run ``step()`` once under the profiler and return the copies it made that belong to the
    kernel: the audit's events (``fxlint.runtime.profiler``) less gradient accumulation into the
    leaves and one-element copies (Python scalars wrapped into tensors). The sweep
    (``tests/_sweep.py``) and ``measure`` both read the runtime through this."""
    from ..runtime.profiler import profile_copies

    raw = profile_copies(step, None, attribute=False)
    out = []
    for c in raw.copies:
        if c.grad_fn and "AccumulateGrad" in c.grad_fn:
            continue
        if _numel(c.shape) <= 1:
            continue
        out.append(c)
    return out


def attribute(shape: Sequence[int], shapes: Mapping[str, Sequence[int]]) -> tuple[str, ...]:
    """The operands (names in ``shapes``) whose shape a copy of ``shape`` has - also as the 2-d
    view ATen takes of a 1-d conv's tensors (a unit dim inserted at 2)."""
    shape = tuple(shape)
    names = []
    for name, s in shapes.items():
        s = tuple(s)
        if shape == s or (len(s) == 3 and shape == s[:2] + (1,) + s[2:]):
            names.append(name)
    return tuple(names)


def _make(o: Operand, gen: torch.Generator) -> torch.Tensor:
    """A leaf tensor with ``o``'s exact strides over a fresh storage of random values."""
    dt = o.torch_dtype
    t = torch.empty_strided(o.shape, o.stride, dtype=dt, device="cpu")
    n = o.storage_elements()
    if n:
        flat = torch.empty(0, dtype=dt, device="cpu").set_(t.untyped_storage(), 0, (n,), (1,))
        with torch.no_grad():
            if dt.is_floating_point or dt.is_complex:
                flat.normal_(generator=gen)
            else:
                flat.random_(0, 8, generator=gen)
    return t.requires_grad_(o.requires_grad and (dt.is_floating_point or dt.is_complex))


@contextlib.contextmanager
def _isolated() -> Iterator[None]:
    """Run real CPU ops whatever the caller is inside: no fake or proxy dispatch mode (a compile
    backend), no torch-function mode (``with torch.device(...)``), autograd on."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch._C.DisableTorchFunction(), torch.inference_mode(False), \
            torch.enable_grad():
        yield


def _run(call: OpCall) -> Measurement:
    fn = RUNNERS.get(call.op)
    if fn is None:
        return Measurement(False, why=f"no probe runner for {call.op!r}")
    gen = torch.Generator(device="cpu").manual_seed(0)
    tensors = {o.name: _make(o, gen) for o in call.operands}
    args = dict(call.args)
    holder: dict[str, torch.Tensor] = {}

    def step() -> None:
        out = fn(tensors, **args)
        holder["out"] = out
        if call.train and out.requires_grad:
            out.backward(torch.ones_like(out))

    step()  # warm-up: oneDNN builds (and caches) its primitives on the first call
    out = holder["out"]
    if call.outputs and tuple(out.shape) != tuple(call.outputs[0]):
        return Measurement(False, why=f"the op gave shape {tuple(out.shape)}, not the graph's {call.outputs[0]}")
    for t in tensors.values():
        t.grad = None
    events = record_copies(step)
    shapes = {o.name: o.shape for o in call.operands}
    shapes["output"] = tuple(out.shape)
    copies = tuple(MeasuredCopy(e.phase, int(e.bytes), e.op, tuple(int(s) for s in e.shape), e.dtype,
                                attribute(e.shape, shapes), bool(e.avoidable)) for e in events)
    return Measurement(True, copies)


def measure(call: OpCall, env: Env | None = None, settings: ProbeSettings | None = None) -> Measurement:
    """The copies ``call`` makes on this machine (from the cache when it was measured before).

    Never raises: a call over the budget, one that fails, or a profiler already running gives
    ``Measurement(ok=False, why=...)``."""
    s = settings or current_settings()
    stats = current_stats()
    digest_src = json.dumps({"call": call.key(), "machine": machine_key(env)}, sort_keys=True)
    digest = hashlib.sha256(digest_src.encode()).hexdigest()[:32]
    path = cache_path(s)
    _load(path)
    hit = _MEMORY.get(digest)
    if hit is not None:
        if stats is not None:
            stats.cached += 1
        if hit.get("ok", True):
            return Measurement(True, tuple(MeasuredCopy.from_json(c) for c in hit["copies"]), cached=True)
        return Measurement(False, why=str(hit.get("why", "the probe failed")), cached=True)

    def give_up(why: str, kind: str) -> Measurement:
        if stats is not None:
            setattr(stats, kind, getattr(stats, kind) + 1)
            stats.reasons.append(why)
        return Measurement(False, why=why)

    try:
        need = call.estimate_bytes()
    except (TypeError, ValueError) as exc:
        return give_up(f"cannot size the probe: {exc}", "failed")
    if need > s.max_mib * 2**20:
        return give_up(f"not measured: running it would allocate about {need / 2**20:.0f} MiB, over the probe "
                       f"budget of {s.max_mib:g} MiB (probe-max-mib)", "skipped")
    if stats is not None and stats.seconds >= s.time_budget_s:
        return give_up(f"not measured: this run spent its probe time budget ({s.time_budget_s:g} s)", "skipped")
    if torch.autograd.profiler._is_profiler_enabled:
        return give_up("not measured: a profiler is already running", "failed")
    t0 = time.perf_counter()
    try:
        with _isolated():
            m = _run(call)
    except Exception as exc:  # noqa: BLE001 - any failure of the op or the profiler is "unknown"
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        m = Measurement(False, why=f"the probe failed: {type(exc).__name__}: {first}")
    dt = time.perf_counter() - t0
    m = replace(m, seconds=dt)
    if stats is not None:
        stats.seconds += dt
        if m.ok:
            stats.measured += 1
        else:
            stats.failed += 1
            stats.reasons.append(m.why)
    if m.ok:
        entry = {"ok": True, "copies": [c.to_json() for c in m.copies], "seconds": round(dt, 4),
                 "at": time.time(), "key": json.loads(digest_src)}
        _MEMORY[digest] = entry
        _write(path, digest, entry)
    else:
        # failures are remembered for this process only: out-of-memory or a busy profiler may pass
        _MEMORY[digest] = {"ok": False, "why": m.why, "copies": []}
    return m


# --------------------------------------------------------------------------- resolving a prediction


def resolve(pred: KernelPrediction, env: Env | None = None, settings: ProbeSettings | None = None) -> KernelPrediction:
    """``pred`` with its machine-dependent parts answered by running the op, when probing is on
    (``probing()``, or ``settings.enabled``) and the prediction says how to run it; else ``pred``.

    The answer is what the machine did: the model's copies it made stay (with their reasons),
    the copies it made beyond them are added as measured ones - named by the unknown part they
    fill (its reason), or ``"measured"`` when no part covered them - and any the model predicted
    but the machine did not make are dropped. A failed probe leaves the parts unknown and adds
    why to them."""
    s = settings or current_settings()
    call = pred.probe
    if not s.enabled or call is None or not pred.machine_dependent:
        return pred
    m = measure(call, env, s)
    if not m.ok:
        parts = tuple(replace(u, why=f"{u.why} ({m.why})") if u.machine else u for u in pred.unknown)
        return pred.with_(unknown=parts)
    return _merge(pred, m)


def _merge(pred: KernelPrediction, m: Measurement) -> KernelPrediction:
    pool = Counter((c.phase, c.nbytes) for c in m.copies)
    kept: list[KernelCopy] = []
    for c in pred.copies:
        try:
            each = int(c.each)
        except (TypeError, ValueError):
            return pred  # symbolic bytes: cannot compare with the machine (no probe call is made then)
        hits = min(c.count, pool[(c.phase, each)])
        pool[(c.phase, each)] -= hits
        if hits == c.count:
            kept.append(c)
        elif hits:
            kept.append(replace(c, count=hits, nbytes=each * hits))
    extra: Counter[tuple[str, str, str, int, bool]] = Counter()
    for mc in m.copies:
        if pool[(mc.phase, mc.nbytes)] > 0:
            pool[(mc.phase, mc.nbytes)] -= 1
            extra[(mc.phase, _operand_for(pred, mc), mc.op, mc.nbytes, mc.avoidable)] += 1
    for (phase, operand, op, each, avoidable), n in extra.items():
        part = next((u for u in pred.unknown if u.covers(phase, operand)), None)
        reason = part.reason if part is not None and part.reason != "*" else "measured"
        more = "one more copy" if n == 1 else f"{n} more copies"
        why = f"measured on this machine: the {phase} makes {more} ({op}) the size of the {operand}"
        kept.append(KernelCopy(operand=operand, nbytes=each * n, phase=phase, op=op, reason=reason, why=why,
                               count=n, avoidable=avoidable, source=MEASURED))
    return pred.with_(copies=tuple(kept), unknown=())


def _operand_for(pred: KernelPrediction, mc: MeasuredCopy) -> str:
    """The operand a measured copy belongs to: of the operands with its shape, the one an unknown
    part of its phase names; else the first; ``"other"`` when no operand has its shape."""
    if not mc.operands:
        return "other"
    for name in mc.operands:
        if any(u.operand == name and u.phase == mc.phase for u in pred.unknown):
            return name
    return mc.operands[0]
