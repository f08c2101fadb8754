"""fxlint under ``torch.distributed``: the wrappers' own graphs, and which rank reports.

**DDP.** With ``torch._dynamo.config.optimize_ddp`` on (its default), Dynamo hands
the graph of a frame to DDPOptimizer, which splits it at DDP's gradient-bucket
boundaries and calls the backend once per piece, each marked with DDPOptimizer's
own "intentional graph-break" reason. Those splits are not the user's breaks, and
a gradient cut in one piece stops parameters used in the others, so the backend
lints the graph DDPOptimizer was given, once, as Dynamo captured it without DDP
(``ddp_original``), and compiles the pieces as they come. DDPOptimizer shares one
``meta`` dict between the original graph and its pieces, and keeps the original
as ``gm`` in its ``compile_fn`` frame, which is on the stack while a piece is
compiled: that frame is where the original is read from (a torch internal; when
it cannot be read, each piece is linted on its own, without the false break).

**FSDP2.** ``fully_shard``'s hooks run outside Dynamo (``torch._dynamo.disable``);
its all-gathers, reshards and hooks never enter a captured graph. Calling a
sharded module from a compiled function is a graph break inside FSDP's code: it
is FSDP's, not the user's (``wrapper_break``).

**Ranks.** Every rank compiles the same program, so every rank would log the same
findings. By default each finding is logged once in the job, by the first rank
that finds it, and the log line says which rank that is (``ranks="first"``); the
ranks agree through the process group's key-value store (one ``add`` per distinct
finding): no collective, nothing a rank can wait on. ``ranks="all"`` logs every
rank's findings, ``ranks=N`` only rank N's. ``fxlint.collect()`` holds the
findings of its own rank; ``Session.gather()`` exchanges them through the same
store when every rank asks for it, with a deadline, and says which ranks saw a
finding that only some did.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import pickle
import socket
import sys
import types
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import torch.fx as fx

    from ..findings import Finding

log = logging.getLogger("fxlint")

#: the store's keys are ours under this prefix
_KEY = "fxlint/v1"

# --------------------------------------------------------------------------- ranks


@dataclass(frozen=True)
class Ranks:
    """This process's place in the default process group."""

    rank: int
    world: int

    def __str__(self) -> str:
        return f"rank {self.rank} of {self.world}"


def current() -> Ranks | None:
    """This process's rank and the world size, when a process group of more than one rank is up."""
    dist = _dist()
    if dist is None or not dist.is_initialized():
        return None
    try:
        world = dist.get_world_size()
        rank = dist.get_rank()
    except Exception:  # noqa: BLE001 - a group being torn down: single-process behaviour
        return None
    return Ranks(rank, world) if world > 1 else None


def _dist() -> Any:
    mod = sys.modules.get("torch.distributed")
    if mod is None:  # fxlint never imports torch.distributed itself: no process group without it
        return None
    return mod if mod.is_available() else None


def _store() -> Any:
    """The default process group's key-value store (a torch internal), or None."""
    dist = _dist()
    if dist is None:
        return None
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001
        return None


RANK_POLICIES = ("first", "all")


def parse_policy(value: Any) -> str | int:
    """The ``ranks`` option: ``"first"``, ``"all"`` or a rank number."""
    if isinstance(value, bool) or not (isinstance(value, int) or value in RANK_POLICIES):
        raise ConfigError(f"options['ranks'] must be 'first', 'all' or a rank number, not {value!r}")
    if isinstance(value, int) and value < 0:
        raise ConfigError(f"options['ranks'] must be 'first', 'all' or a rank number, not {value!r}")
    return value


def to_report(findings: Sequence[Finding], policy: str | int, ranks: Ranks) -> tuple[list[Finding], str]:
    """The findings this rank logs under ``policy``, and why it is this rank (for the log line).

    ``first``: those no other rank has logged yet (the store decides; without a store, rank 0
    logs). ``all``: every one. ``N``: every one on rank N, none elsewhere."""
    mine, why = logs(["finding:" + repr(f.key()) for f in findings], policy, ranks)
    shown = [f for f, keep in zip(findings, mine) if keep]
    if why == "first":
        why = f"the first rank to find {'it' if len(shown) == 1 else 'them'}"
    return shown, why


def logs(keys: Sequence[str], policy: str | int, ranks: Ranks) -> tuple[list[bool], str]:
    """For each key (a finding, a rewrite), does this rank log it under ``policy``? And why
    (``""``, ``"first"``, ``"rank 0 reports"``)."""
    if policy == "all":
        return [True] * len(keys), ""
    if isinstance(policy, int):
        return [ranks.rank == policy] * len(keys), ""
    store = _store()
    if store is None:
        return [ranks.rank == 0] * len(keys), "rank 0 reports"
    out = []
    for key in keys:
        digest = hashlib.sha1(key.encode()).hexdigest()[:20]
        try:
            out.append(store.add(f"{_KEY}/first/{digest}", 1) == 1)
        except Exception:  # noqa: BLE001 - the store is gone (a rank died): say it here rather than lose it
            out.append(True)
    return out, "first"


# --------------------------------------------------------------------------- gather


@dataclass(frozen=True)
class Gathered:
    """Every rank's findings after ``Session.gather``: the merged findings (each with ``ranks``),
    the world size, and the ranks that did not answer before the deadline."""

    findings: list[Finding]
    world: int
    missing: tuple[int, ...] = ()


_gathers = itertools.count()


def gather(findings: Sequence[Finding], timeout: float) -> Gathered:
    """Exchange each rank's findings through the store; every rank must call it, in the same order.

    A rank that does not answer within ``timeout`` seconds is listed in ``missing``; nothing waits
    longer. Without a process group of several ranks, the findings come back as they are."""
    from ..findings import dedupe

    ranks = current()
    n = next(_gathers)
    if ranks is None:
        return Gathered(dedupe(findings), 1)
    store = _store()
    if store is None:
        raise RuntimeError("fxlint: the process group has no key-value store to exchange findings through")
    prefix = f"{_KEY}/gather/{n}/"
    store.set(prefix + str(ranks.rank), _dumps(findings))
    keys = [prefix + str(r) for r in range(ranks.world)]
    try:
        store.wait(keys, timedelta(seconds=timeout))
    except Exception:  # noqa: BLE001 - a deadline or a dead rank: merge what came
        pass
    per_rank: dict[int, list[Finding]] = {}
    missing = []
    for r, key in enumerate(keys):
        try:
            if not store.check([key]):
                missing.append(r)
                continue
            per_rank[r] = _loads(store.get(key))
        except Exception:  # noqa: BLE001
            missing.append(r)
    return Gathered(merge(per_rank, ranks.world), ranks.world, tuple(missing))


def merge(per_rank: dict[int, list[Finding]], world: int) -> list[Finding]:
    """One finding per ``Finding.key()``, in the order the ranks list them, each with the ranks
    that found it; one that only some ranks found says so in its message."""
    order: list[tuple] = []
    first: dict[tuple, Finding] = {}
    seen: dict[tuple, list[int]] = {}
    for r in sorted(per_rank):
        for f in per_rank[r]:
            k = f.key()
            if k not in first:
                first[k] = f
                order.append(k)
                seen[k] = []
            if r not in seen[k]:
                seen[k].append(r)
    out = []
    for k in order:
        f, who = first[k], tuple(seen[k])
        if len(who) < world:
            f = f.with_(message=f"{f.message} {only_on(who, world)}")
        out.append(f.with_(ranks=who))
    return out


def only_on(ranks: Sequence[int], world: int) -> str:
    """``Found on rank 1 of 2 only (rank-dependent code).``"""
    names = ", ".join(map(str, ranks))
    return f"Found on rank{'s' if len(ranks) != 1 else ''} {names} of {world} only (rank-dependent code)."


def _dumps(findings: Sequence[Finding]) -> bytes:
    try:
        return pickle.dumps(list(findings))
    except Exception:  # noqa: BLE001 - a violation that does not pickle: its text is enough
        return pickle.dumps([f.with_(violation=None) for f in findings])


def _loads(data: bytes) -> list[Finding]:
    return list(pickle.loads(data))  # noqa: S301 - written by this job's own ranks


# --------------------------------------------------------------------------- DDP


def _is_ddp_reason(reason: Any) -> bool:
    """Is this DDPOptimizer's "intentional graph-break" (a split at a bucket boundary)?"""
    if reason is None:
        return False
    for fs in getattr(reason, "user_stack", None) or ():
        if fs.name == "DDPOptimizer" and _is_torch_file(fs.filename, ("_dynamo", "backends", "distributed.py")):
            return True
    return str(getattr(reason, "reason", "")).startswith("DDPOptimizer intentional graph-break")


def is_ddp_split(gm: fx.GraphModule) -> bool:
    """Is ``gm`` one of the pieces DDPOptimizer split a captured graph into?"""
    return _is_ddp_reason(getattr(gm, "compile_subgraph_reason", None))


def ddp_original(gm: fx.GraphModule) -> fx.GraphModule | None:
    """The graph Dynamo captured, that DDPOptimizer split ``gm`` from (None when ``gm`` is not a
    piece of a split, or the original cannot be found)."""
    if not is_ddp_split(gm):
        return None
    try:
        from torch._dynamo.backends.distributed import DDPOptimizer
    except Exception:  # noqa: BLE001
        return None
    code = DDPOptimizer.compile_fn.__code__
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            original = frame.f_locals.get("gm")
            # the pieces share the original's ``meta`` dict (DDPOptimizer's propagate_metadata)
            if original is not None and getattr(original, "meta", None) is getattr(gm, "meta", object()):
                return original
            return None
        frame = frame.f_back
    return None


class SplitGraphs:
    """The graphs DDPOptimizer split whose pieces were linted already, with their labels (held
    weakly: a graph Dynamo drops is forgotten)."""

    def __init__(self) -> None:
        self._labels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def label(self, original: Any) -> str | None:
        return self._labels.get(original)

    def add(self, original: Any, label: str) -> str:
        self._labels[original] = label
        return label


# --------------------------------------------------------------------------- wrapper breaks

_FSDP_DIRS = (("distributed", "fsdp"), ("distributed", "_composable"))


def _is_torch_file(path: str, parts: tuple[str, ...]) -> bool:
    from ..util.source import _TORCH_DIR

    p = os.path.abspath(path)
    return p.startswith(os.path.join(_TORCH_DIR, *parts))


def wrapper_break(reason: Any) -> str | None:
    """``"DDPOptimizer"``, ``"FSDP"`` or ``"DDP"`` when a Dynamo graph break is the wrapper's own
    (a bucket split; a call into FSDP's Dynamo-disabled hooks; DDP's own ``forward``, which Dynamo
    does not trace when a DDP module is called from inside a compiled function), else None."""
    if _is_ddp_reason(reason):
        return "DDPOptimizer"
    for fs in getattr(reason, "user_stack", None) or ():
        if any(_is_torch_file(fs.filename, d) for d in _FSDP_DIRS):
            return "FSDP"
        if _is_torch_file(fs.filename, ("nn", "parallel")):
            return "DDP"
    if "DistributedDataParallel." in str(getattr(reason, "reason", "")):
        return "DDP"
    return None


# --------------------------------------------------------------------------- single process


def unwrap(model: Any) -> Any:
    """The module a ``DistributedDataParallel`` (or ``DataParallel``) wraps; anything else as it is.

    Linting the wrapped module is linting the model: DDP adds gradient hooks and, under
    ``torch.compile``, bucket splits, none of them the user's code."""
    nn = sys.modules.get("torch.nn")
    if nn is None:
        return model
    wrappers: tuple[type[Any], ...] = (nn.DataParallel,)
    dist = _dist()
    if dist is not None:
        wrappers += (nn.parallel.DistributedDataParallel,)
    while isinstance(model, wrappers):
        model = model.module
    return model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def single_process_env() -> Iterator[None]:
    """The environment ``init_process_group()`` reads (``env://``) for a one-process job, where the
    caller did not set it: a factory that starts a process group (to wrap its model in DDP or
    ``fully_shard``) then runs in a plain ``fxlint lint``. Set variables are left alone."""
    defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    added = {k: v for k, v in defaults.items() if k not in os.environ}
    if added and "MASTER_PORT" not in os.environ:
        added["MASTER_PORT"] = str(_free_port())
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def materialised(example_inputs: Sequence[Any]) -> list[Any]:
    """Real tensors in place of fake ones (same shape, strides, dtype, device and requires_grad;
    floating values from a fixed seed, integers zero): DDPOptimizer hands each piece fake
    inputs, and a rewrite is verified by running the graph."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    gen = torch.Generator().manual_seed(0)
    out: list[Any] = []
    for x in example_inputs:
        if not isinstance(x, FakeTensor):
            out.append(x)
            continue
        with torch._subclasses.fake_tensor.unset_fake_temporarily():
            real = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=x.device)
            if real.is_floating_point() or real.is_complex():
                real.copy_(torch.randn(tuple(x.shape), generator=gen, dtype=x.dtype))
            else:
                real.zero_()
            out.append(real.requires_grad_(x.requires_grad) if real.is_floating_point() else real)
    return out


def needs_process_group(exc: BaseException) -> bool:
    """Did ``exc`` say that a default process group is needed (``DDP(model)`` without one)?"""
    text = str(exc)
    return "process group has not been initialized" in text or "init_process_group" in text


def start_one_process_group() -> None:
    """A one-rank gloo process group on an in-memory store (for ``fxlint lint`` of a factory that
    wraps its model in DDP or ``fully_shard`` without starting one)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


__all__ = [
    "Gathered",
    "Ranks",
    "SplitGraphs",
    "current",
    "ddp_original",
    "gather",
    "is_ddp_split",
    "merge",
    "parse_policy",
    "single_process_env",
    "to_report",
    "unwrap",
    "wrapper_break",
]
