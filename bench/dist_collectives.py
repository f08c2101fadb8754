"""What collectives do with tensors that are not contiguous, on this machine (gloo, CPU).

    .venv/bin/python bench/dist_collectives.py            # two gloo ranks, a Markdown table on stdout
    python bench/dist_collectives.py --backend nccl --world 1 --compiled aot_eager,inductor  # a GPU: NCCL

For each collective, each input layout and each way of calling it, two gloo ranks run the call
under ``torch.profiler`` and check the result against the same computation on contiguous tensors:

* ``c10d``: ``torch.distributed.all_reduce(t)`` and friends, run eagerly;
* ``functional``: ``torch.distributed._functional_collectives`` (what ``torch.compile`` captures
  every ``dist.*`` call as: ``torch.ops._c10d_functional.*`` then ``wait_tensor``).

``extra copy`` is the bytes ``aten::copy_`` wrote beyond what the same call writes for a
contiguous tensor of that shape (the copies the layout costs); ``outside`` counts the elements of
the tensor the view was taken from that changed although they are not in the view. FXL601's
claims are this table's (``fxlint/passes/fxl601_noncontiguous_collective.py``); the distributed
tests re-measure the functional path. ``--compiled`` adds the ``dist.*`` calls compiled with
``aot_eager`` and Inductor (correct or not; no copy count: Inductor fuses).
"""

from __future__ import annotations

import argparse
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
    # name -> (base shape, view of the base); every view holds 24 floats
    "contiguous": ((4, 6), lambda b: b),
    "transposed (dense)": ((6, 4), lambda b: b.t()),
    "every other column (not dense)": ((4, 12), lambda b: b[:, ::2]),
    "channels_last 4-D (dense)": ((2, 2, 2, 3), lambda b: b.permute(0, 3, 1, 2)),
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


def _cases(rank: int, group: Any, compiled: tuple[str, ...] = ()
           ) -> dict[str, tuple[Callable[[torch.Tensor], Any], Callable[[list], Any]]]:
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

    if compiled:
        cases: dict[str, Any] = {}
        for backend in compiled:
            for name, fn, want in (("all_reduce", ar, lambda ts: sum(ts)),
                                   ("all_gather_into_tensor", ag, lambda ts: torch.cat(ts)),
                                   ("reduce_scatter_tensor", rs, lambda ts: sum(ts).chunk(w)[rank]),
                                   ("all_to_all_single", a2a, mine)):
                cases[f"{name} compiled ({backend})"] = (torch.compile(fn, backend=backend, dynamic=False), want)
        return cases

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


def _worker(rank: int, port: int, queue: Any, backend: str, world: int, compiled: tuple[str, ...]) -> None:
    try:
        _measure(rank, port, queue, backend, world, compiled)
    except BaseException:  # noqa: BLE001 - the parent prints it rather than waiting for rows
        import traceback

        queue.put(traceback.format_exc())
        raise


def _measure(rank: int, port: int, queue: Any, backend: str, world: int, compiled: tuple[str, ...]) -> None:
    global WORLD
    WORLD = world
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    torch.set_default_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    group = dist.group.WORLD
    rows = []
    cases = dict(_cases(rank, group))
    if compiled:
        cases.update(_cases(rank, group, compiled=compiled))
    for case, (call, expected) in cases.items():
        baseline = None
        for layout, (shape, make) in LAYOUTS.items():
            n = 1
            for s_ in shape:
                n *= s_
            bases = [torch.arange(n, dtype=torch.float32).reshape(shape) + 1000 * r for r in range(WORLD)]
            views = [make(b) for b in bases]
            mine_base = bases[rank].clone()
            mine_view = make(mine_base)
            before = mine_base.clone()
            want = expected([v.clone() for v in views])
            try:
                nbytes, got = _copy_bytes(lambda: call(mine_view))
                ok = torch.equal(got, want)
                # elements of the base that are not in the view and changed anyway
                marker = torch.zeros(shape, dtype=torch.bool)  # on the default device
                make(marker).fill_(True)
                outside = int(((mine_base != before) & ~marker).sum())
                result = "correct" if ok else "WRONG"
                err = None
            except Exception as exc:  # noqa: BLE001 - the table reports it
                text = str(exc).strip().splitlines()
                nbytes, result, outside, err = None, "error", 0, f"{type(exc).__name__}: {text[0] if text else ''}"[:160]
            if layout == "contiguous":
                baseline = nbytes
            extra = None if nbytes is None or baseline is None else nbytes - baseline
            rows.append((case, layout, result if err is None else err, extra, outside))
            dist.barrier()
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--world", type=int, default=2, help="ranks (NCCL: one per GPU)")
    parser.add_argument("--compiled", default="", metavar="BACKENDS",
                        help="also the dist.* calls under torch.compile with these backends (aot_eager,inductor)")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    compiled = tuple(b for b in args.compiled.split(",") if b)
    procs = [ctx.Process(target=_worker, args=(r, port, queue, args.backend, args.world, compiled))
             for r in range(args.world)]
    for p in procs:
        p.start()
    rows = queue.get(timeout=540)
    for p in procs:
        p.join(60)
    if isinstance(rows, str):  # a rank's traceback
        print(rows, file=sys.stderr)
        return 1
    where = "CUDA" if args.backend == "nccl" else "CPU"
    print(f"torch {torch.__version__}, {args.backend}, {args.world} rank(s) on {where}; "
          "tensors of 24 float32 (96 B)\n")
    print("| call | layout | result | extra copy | outside the view |")
    print("| --- | --- | --- | --- | --- |")
    for case, layout, result, extra, outside in rows:
        extra_text = "-" if extra is None else f"{extra} B"
        print(f"| {case} | {layout} | {result} | {extra_text} | {outside or '-'} |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    sys.exit(main())
