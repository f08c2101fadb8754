"""Ranks for the distributed tests: processes in one gloo process group on loopback, started once.

Starting a process that imports torch and compiles a model costs most of a test's time on a
2-core machine, so a module starts its ranks once (``RankPool``) and runs every scenario in them:
``pool.run("ddp", optimize_ddp=True)`` calls ``tests.dist_scenarios.ddp(optimize_ddp=True)`` on
every rank at once and returns what each rank returned, in rank order.

Nothing can hang: the process group has a short timeout (a collective one rank never joins
raises after ``PG_TIMEOUT_S``), every ``run`` has a deadline after which the ranks are killed
(SIGKILL) and the call raises, and a rank whose parent died exits by itself. A rank that raised
sends its traceback; the pool is then restarted for the next scenario (a failed collective can
leave the group unusable).
"""

from __future__ import annotations

import contextlib
import datetime
import multiprocessing as mp
import os
import queue
import socket
import time
import traceback
from typing import Any, Iterator

PG_TIMEOUT_S = 30
START_TIMEOUT_S = 150


class RankFailure(AssertionError):
    """A rank raised, or did not answer in time."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RankPool:
    """``world`` processes in a gloo process group, serving scenarios (see module docstring)."""

    def __init__(self, world: int = 2) -> None:
        self.world = world
        self._procs: list[Any] = []
        self._start()

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        port = free_port()
        self._inboxes = [ctx.Queue() for _ in range(self.world)]
        self._outbox = ctx.Queue()
        self._procs = [ctx.Process(target=_serve, name=f"fxlint-test-rank{r}", daemon=True,
                                   args=(r, self.world, port, self._inboxes[r], self._outbox, os.getpid()))
                       for r in range(self.world)]
        for p in self._procs:
            p.start()
        self._collect("ready", START_TIMEOUT_S)

    def _collect(self, what: str, timeout: float) -> list[Any]:
        got: dict[int, tuple[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while len(got) < self.world:
            left = deadline - time.monotonic()
            try:
                rank, status, payload = self._outbox.get(timeout=max(left, 0.01))
            except queue.Empty:
                missing = sorted(set(range(self.world)) - set(got))
                self.kill()
                raise RankFailure(f"{what}: rank(s) {missing} did not answer within {timeout:.0f} s; ranks killed")
            got[rank] = (status, payload)
            if status == "error":
                self.kill()
                raise RankFailure(f"{what}: rank {rank} raised:\n{payload}")
            if not any(p.is_alive() for p in self._procs) and len(got) < self.world:
                break
        dead = [r for r in range(self.world) if r not in got]
        if dead:
            self.kill()
            raise RankFailure(f"{what}: rank(s) {dead} exited without answering")
        return [got[r][1] for r in range(self.world)]

    def run(self, scenario: str, timeout: float = 90, **kwargs: Any) -> list[Any]:
        """Run ``tests.dist_scenarios.<scenario>(**kwargs)`` on every rank; their results by rank."""
        if not self._procs or not all(p.is_alive() for p in self._procs):
            self._start()
        for q in self._inboxes:
            q.put((scenario, kwargs))
        return self._collect(scenario, timeout)

    def kill(self) -> None:
        """Kill every rank now (SIGKILL) and forget them."""
        for p in self._procs:
            if p.is_alive():
                p.kill()
        for p in self._procs:
            p.join(5)
        self._procs = []

    def close(self) -> None:
        for q in getattr(self, "_inboxes", []):
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 10
        for p in self._procs:
            p.join(max(deadline - time.monotonic(), 0.1))
        self.kill()


def _serve(rank: int, world: int, port: int, inbox: Any, outbox: Any, parent: int) -> None:
    """A rank: join the group, then run scenarios until told to stop (or the parent is gone)."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    os.environ["OMP_NUM_THREADS"] = "1"
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        import warnings

        import torch
        import torch.distributed as dist

        warnings.simplefilter("ignore")
        torch.set_num_threads(1)  # two ranks share the machine's cores with the test runner
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
        from tests import dist_scenarios
    except BaseException:  # noqa: BLE001 - report it, then exit
        outbox.put((rank, "error", traceback.format_exc()))
        return
    outbox.put((rank, "ready", None))
    while True:
        try:
            msg = inbox.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent:  # the test runner died: do not linger
                break
            continue
        if msg is None:
            break
        name, kwargs = msg
        try:
            torch._dynamo.reset()
            result = getattr(dist_scenarios, name)(**kwargs)
            outbox.put((rank, "ok", result))
        except BaseException:  # noqa: BLE001 - the test shows the rank's traceback
            outbox.put((rank, "error", traceback.format_exc()))
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


@contextlib.contextmanager
def one_rank_group() -> Iterator[None]:
    """A one-rank gloo process group in this process (an in-memory store, no port), for the tests
    that lint collectives without starting ranks; removed afterwards unless one was already up."""
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
