"""FXL111 measurement: ``t.masked_fill(mask, v)`` (a clone of ``t``, then the fill) vs ``torch.where(mask, v, t)``
(one pass, no copy).

For each case both spellings are timed in one run with torch.utils.benchmark (blocked_autorange medians),
interleaved over ``--rounds`` rounds so that load from other processes on a shared machine hits them alike; the
figure is the median over rounds, with the spread (min-max over rounds) of the ratio.

    .venv/bin/python bench/where_vs_masked_fill.py [--threads 1] [--backward]

``--backward`` times forward + backward. Prints one line per case: medians in microseconds and the ratio
masked_fill / where (> 1 means torch.where is faster).
"""

from __future__ import annotations

import argparse
import statistics

import torch
from _rounds import interleaved_rounds  # bench/, the script's own directory

CASES = [
    # label, scores shape, mask shape (broadcast to the scores)
    ("attention scores, key padding mask", (8, 8, 128, 128), (8, 1, 1, 128)),
    ("attention scores, causal mask", (8, 8, 128, 128), (128, 128)),
    ("long sequence, one head", (2, 1, 1024, 1024), (1024, 1024)),
    ("small scores (speech, 40 frames)", (8, 40, 40), (40, 40)),
]

SPELLINGS = {
    "masked_fill": lambda t, m: t.masked_fill(m, -1e9),
    "where": lambda t, m: torch.where(m, -1e9, t),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--min-run-time", type=float, default=0.3, help="seconds per spelling per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {'forward+backward' if args.backward else 'forward'}")
    for label, shape, mshape in CASES:
        t = torch.randn(shape, requires_grad=args.backward)
        m = torch.rand(mshape) > 0.5
        assert torch.equal(SPELLINGS["masked_fill"](t, m), SPELLINGS["where"](t, m))
        grad = torch.randn(shape)
        stmt = "fn(t, m).backward(grad); t.grad = None" if args.backward else "fn(t, m)"
        rounds = interleaved_rounds(SPELLINGS, stmt, {"t": t, "m": m, "grad": grad}, rounds=args.rounds,
                                    min_run_time=args.min_run_time, threads=args.threads, label=label)
        medians = {k: statistics.median(v) for k, v in rounds.items()}
        ratios = [a / b for a, b in zip(rounds["masked_fill"], rounds["where"])]
        cells = ", ".join(f"{k} {v:9.1f} us" for k, v in medians.items())
        print(f"{label:38s} {cells}  masked_fill/where = {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
