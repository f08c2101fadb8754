"""What collectives do with tensors that are not contiguous, on this machine (gloo, CPU).

    .venv/bin/python bench/dist_collectives.py            # two ranks, a Markdown table on stdout

For each collective, each input layout and each way of calling it, two gloo ranks run the call
under ``torch.profiler`` and check the result against the same computation on contiguous tensors:

* ``c10d``: ``torch.distributed.all_reduce(t)`` and friends, run eagerly;
* ``functional``: ``torch.distributed._functional_collectives`` (what ``torch.compile`` captures
  every ``dist.*`` call as: ``torch.ops._c10d_functional.*`` then ``wait_tensor``).

``extra copy`` is the bytes ``aten::copy_`` wrote beyond what the same call writes for a
contiguous tensor of that shape (the copies the layout costs); ``outside`` counts the elements of
the tensor the view was taken from that changed although they are not in the view. FXL601's
claims are this table's (``fxlint/passes/fxl601_noncontiguous_collective.py``); the distributed
tests re-measure the functional path.
"""

from __future__ import annotations

import datetime
import os
import socket
import sys
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.multiprocessing as mp

WORLD = 2
LAYOUTS = {
    # name -> (base shape, view of the base); every view is (4, 6) or (6, 4) floats
    "contiguous": ((4, 6), lambda b: b),
    "transposed (dense)": ((6, 4), lambda b: b.t()),
    "every other column (not dense)": ((4, 12), lambda b: b[:, ::2]),
}


def _copy_bytes(fn: Callable[[], Any]) -> tuple[int, Any]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        out = fn()
    total = 0
    for e in prof.events():
        if e.name == "aten::copy_" and e.input_shapes and e.input_shapes[0]:
            n = 1
            for s in e.input_shapes[0]:
                n *= s
            total += n * 4
    return total, out


def _cases(rank: int, group: Any) -> dict[str, tuple[Callable[[torch.Tensor], Any], Callable[[list], Any]]]:
    """name -> (call on this rank's tensor returning the result, expected result from every rank's tensor)."""
    w = WORLD

    def ar(t: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(t)
        return t

    def bc(t: torch.Tensor) -> torch.Tensor:
        dist.broadcast(t, 0)
        return t

    def ag(t: torch.Tensor) -> torch.Tensor:
        out = torch.empty(w * t.shape[0], *t.shape[1:])
        dist.all_gather_into_tensor(out, t)
        return out

    def ag_list(t: torch.Tensor) -> torch.Tensor:
        outs = [torch.empty(t.shape) for _ in range(w)]
        dist.all_gather(outs, t)
        return torch.cat(outs)

    def rs(t: torch.Tensor) -> torch.Tensor:
        out = torch.empty(t.shape[0] // w, *t.shape[1:])
        dist.reduce_scatter_tensor(out, t)
        return out

    def a2a(t: torch.Tensor) -> torch.Tensor:
        out = torch.empty(t.shape)
        dist.all_to_all_single(out, t)
        return out

    def mine(ts: list, r: int = rank) -> torch.Tensor:
        return torch.cat([t.chunk(w)[r] for t in ts])

    return {
        "all_reduce c10d": (ar, lambda ts: sum(ts)),
        "broadcast c10d": (bc, lambda ts: ts[0]),
        "all_gather_into_tensor c10d": (ag, lambda ts: torch.cat(ts)),
        "all_gather (list) c10d": (ag_list, lambda ts: torch.cat(ts)),
        "reduce_scatter_tensor c10d": (rs, lambda ts: sum(ts).chunk(w)[rank]),
        "all_to_all_single c10d": (a2a, mine),
        "all_reduce functional": (lambda t: funcol.wait_tensor(funcol.all_reduce(t, "sum", group)),
                                  lambda ts: sum(ts)),
        "broadcast functional": (lambda t: funcol.wait_tensor(funcol.broadcast(t, 0, group)), lambda ts: ts[0]),
        "all_gather_into_tensor functional": (lambda t: funcol.wait_tensor(funcol.all_gather_tensor(t, 0, group)),
                                              lambda ts: torch.cat(ts)),
        "reduce_scatter_tensor functional": (
            lambda t: funcol.wait_tensor(funcol.reduce_scatter_tensor(t, "sum", 0, group)),
            lambda ts: sum(ts).chunk(w)[rank]),
        "all_to_all_single functional": (
            lambda t: funcol.wait_tensor(funcol.all_to_all_single(t, None, None, group)), mine),
    }


def _worker(rank: int, port: int, queue: Any) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    group = dist.group.WORLD
    rows = []
    for case, (call, expected) in _cases(rank, group).items():
        baseline = None
        for layout, (shape, make) in LAYOUTS.items():
            bases = [torch.arange(shape[0] * shape[1], dtype=torch.float32).reshape(shape) + 1000 * r
                     for r in range(WORLD)]
            views = [make(b) for b in bases]
            mine_base = bases[rank].clone()
            mine_view = make(mine_base)
            before = mine_base.clone()
            want = expected([v.clone() for v in views])
            try:
                nbytes, got = _copy_bytes(lambda: call(mine_view))
                ok = torch.equal(got, want)
                # elements of the base that are not in the view and changed anyway
                marker = torch.zeros(shape, dtype=torch.bool)
                make(marker).fill_(True)
                outside = int(((mine_base != before) & ~marker).sum())
                result = "correct" if ok else "WRONG"
                err = None
            except Exception as exc:  # noqa: BLE001 - the table reports it
                nbytes, result, outside, err = None, "error", 0, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            if layout == "contiguous":
                baseline = nbytes
            extra = None if nbytes is None or baseline is None else nbytes - baseline
            rows.append((case, layout, result if err is None else err, extra, outside))
            dist.barrier()
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def main() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, port, queue)) for r in range(WORLD)]
    for p in procs:
        p.start()
    rows = queue.get(timeout=300)
    for p in procs:
        p.join(60)
    print(f"torch {torch.__version__}, gloo, {WORLD} ranks on CPU; tensors of 24 float32 (96 B)\n")
    print("| call | layout | result | extra copy | outside the view |")
    print("| --- | --- | --- | --- | --- |")
    for case, layout, result, extra, outside in rows:
        extra_text = "-" if extra is None else f"{extra} B"
        print(f"| {case} | {layout} | {result} | {extra_text} | {outside or '-'} |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    sys.exit(main())
