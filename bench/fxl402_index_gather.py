"""FXL402 measurement: advanced indexing with one 1-D index tensor vs the dedicated kernels.

For each case the same gather is spelled two or three ways and timed in one
run with torch.utils.benchmark (blocked_autorange medians), the spellings
interleaved over ``--rounds`` rounds so that load from other processes on a
shared machine hits them alike (the figure is the median over rounds):

* ``x[idx]`` / ``x[:, idx]``   -> aten::index (TensorIterator-based advanced indexing)
* ``x.index_select(d, idx)``  -> aten::index_select
* ``F.embedding(idx, x)``     -> aten::embedding (dim 0 of a 2-D table only)

``--backward`` times forward + backward (``out.backward(grad)``), where
aten::index's backward is index_put_(accumulate=True) and index_select's is
index_add_.

    .venv/bin/python bench/fxl402_index_gather.py [--threads 1] [--backward]

Prints one line per case: medians in microseconds and the ratio
index / index_select (> 1 means index_select is faster).
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F
from _rounds import interleaved_rounds  # bench/, the script's own directory

CASES = [
    # label, shape, dim, index length
    ("rows of a 2-D table (dim 0)", (50_000, 256), 0, 4096),
    ("rows of a small 2-D table (dim 0)", (1_000, 64), 0, 512),
    ("columns of a 2-D tensor (dim 1)", (256, 8192), 1, 4096),
    ("time steps of (B, T, C) (dim 1)", (32, 1024, 128), 1, 512),
    ("channels of (B, T, C) (dim 2, last)", (32, 1024, 128), 2, 64),
    ("narrow rows (dim 0, 8 wide)", (65_536, 8), 0, 16_384),
    ("time steps, 4 channels (dim 1)", (64, 4096, 4), 1, 2048),
    ("last dim of a 2-D tensor (dim 1, last)", (4096, 512), 1, 256),
]


def spellings(dim: int, ndim: int):
    pre = (slice(None),) * dim
    out = {
        "index": lambda x, i: x[pre + (i,)],
        "index_select": lambda x, i: x.index_select(dim, i),
    }
    if dim == 0 and ndim == 2:
        out["embedding"] = lambda x, i: F.embedding(i, x)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--min-run-time", type=float, default=0.3, help="seconds per spelling per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {'forward+backward' if args.backward else 'forward'}")
    for label, shape, dim, n in CASES:
        x = torch.randn(shape, requires_grad=args.backward)
        idx = torch.randint(0, shape[dim], (n,))
        fns = spellings(dim, len(shape))
        grad = torch.randn_like(fns["index"](x, idx)).detach()
        stmt = "fn(x, idx).backward(grad); x.grad = None" if args.backward else "fn(x, idx)"
        rounds = interleaved_rounds(fns, stmt, {"x": x, "idx": idx, "grad": grad}, rounds=args.rounds,
                                    min_run_time=args.min_run_time, threads=args.threads, label=label)
        medians = {k: statistics.median(v) for k, v in rounds.items()}
        ratio = medians["index"] / medians["index_select"]
        cells = ", ".join(f"{k} {v:9.1f} us" for k, v in medians.items())
        print(f"{label:40s} {cells}  index/index_select = {ratio:.2f}")


if __name__ == "__main__":
    main()
