"""Eager speed and copied bytes of a scenario model before and after ``fxlint.rewrite``.

    .venv/bin/python bench/rewrite_speedup.py [models/speech_separation.py:make] [--threads 1]

Times, in one run with torch.utils.benchmark (blocked_autorange medians), the
variants interleaved over ``--rounds`` rounds so that load from other processes
on a shared machine hits them alike; the figure is the median over rounds, and
the ratio range over rounds is printed too:

* ``model``: the user's module, eager;
* ``captured``: the graph fxlint captured, before any rewrite (``RewriteResult.original``);
* ``rewritten``: ``RewriteResult.module``;

for inference (``torch.no_grad``) and a training step (forward, backward of
``(out * w).sum()``). The ratio is captured/rewritten (the rewrite's own
effect; model/captured is the GraphModule's call overhead). Bytes are what
``fxlint.audit`` records per call (train=False and train=True).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
import torch.utils.benchmark as benchmark

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fxlint  # noqa: E402
from fxlint.capture.target import load_target  # noqa: E402
from fxlint.tensor.info import human_bytes  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target", nargs="?", default="models/speech_separation.py:make")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-run-time", type=float, default=0.5, help="seconds per variant per round")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    loaded = load_target(args.target)
    model, inputs = loaded.obj, loaded.inputs
    result = fxlint.rewrite(model, inputs)
    print(result)
    variants = {"model": model, "captured": result.original, "rewritten": result.module}
    out = model(*inputs)
    w = torch.randn(out.shape)

    def infer(m):
        with torch.no_grad():
            m(*inputs)

    def train(m):
        (m(*inputs) * w).sum().backward()
        for p in model.parameters():
            p.grad = None

    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.target}")
    for phase, fn in (("inference", infer), ("training step", train)):
        rounds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, m in variants.items():
                t = benchmark.Timer(stmt="fn(m)", globals={"fn": fn, "m": m}, num_threads=args.threads)
                rounds[name].append(t.blocked_autorange(min_run_time=args.min_run_time).median * 1e3)
        med = {k: statistics.median(v) for k, v in rounds.items()}
        per_round = [c / r for c, r in zip(rounds["captured"], rounds["rewritten"])]
        cells = ", ".join(f"{k} {v:.3f} ms" for k, v in med.items())
        print(f"{phase:14s} {cells}; captured/rewritten = {med['captured'] / med['rewritten']:.2f} "
              f"(rounds {min(per_round):.2f}-{max(per_round):.2f}), model/rewritten = "
              f"{med['model'] / med['rewritten']:.2f}")
    for train_ in (False, True):
        b0 = fxlint.audit(model, inputs, train=train_).total_bytes
        b1 = fxlint.audit(result.module, inputs, train=train_).total_bytes
        what = "training step" if train_ else "inference"
        print(f"audited copies per {what}: {human_bytes(b0)} ({b0} B) before, {human_bytes(b1)} ({b1} B) after")


if __name__ == "__main__":
    main()
