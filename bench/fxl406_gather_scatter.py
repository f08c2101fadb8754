"""FXL406 measurement: message passing by gather + scatter vs one sparse matmul.

For each graph (N nodes, E unique random edges, C features) the same sum
aggregation ``out[dst] += x[src]`` (and, with ``--weighted``, ``out[dst] +=
w * x[src]``) is spelled two ways and timed in one run with
torch.utils.benchmark (blocked_autorange medians), the spellings interleaved
over ``--rounds`` rounds so that load from other processes on a shared machine
hits them alike (the figure is the median over rounds, the spread the min-max
of the rounds):

* ``gather+scatter``: ``x.index_select(0, src)`` (an E x C tensor of messages), then
  ``new_zeros(N, C).index_add_(0, dst, messages)``;
* ``gather+scatter_add_``: the same with ``new_zeros(N, C).scatter_add_(0,
  dst.view(-1, 1).expand_as(messages), messages)``, PyG's own spelling;
* ``sparse.mm``: ``torch.sparse.mm(adj, x)`` with ``adj`` the N x N CSR adjacency
  (rows = destinations), built once per graph outside the timed region.

``--backward`` times forward + backward with respect to ``x``.

    .venv/bin/python bench/fxl406_gather_scatter.py [--threads 1] [--weighted] [--backward]

Prints one line per graph: medians in microseconds, the ratios gather+scatter / sparse.mm
(> 1 means the sparse matmul is faster) and each ratio's spread over the rounds.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as benchmark

CASES = [
    # label, nodes, edges, features
    ("small graph", 100, 800, 32),
    ("Cora-sized", 2708, 10556, 64),
    ("wide features", 2708, 10556, 256),
    ("larger graph", 20000, 200000, 64),
]


def graph(n: int, e: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``e`` unique random edges (no duplicates: the CSR sum equals the scatter sum only then)."""
    g = torch.Generator().manual_seed(0)
    keys = torch.unique(torch.randint(0, n * n, (2 * e,), generator=g))
    keys = keys[torch.randperm(keys.numel(), generator=g)[:e]]
    return keys // n, keys % n  # src, dst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--weighted", action="store_true", help="per-edge weights (the CSR's values)")
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--min-run-time", type=float, default=0.3, help="seconds per spelling per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {args.threads} thread(s), {'weighted' if args.weighted else 'unweighted'}, "
          f"{'forward+backward' if args.backward else 'forward'}")
    for label, n, e, c in CASES:
        run_case(label, n, e, c, args)


def run_case(label: str, n: int, e: int, c: int, args: argparse.Namespace) -> None:
    src, dst = graph(n, e)
    w = torch.rand(e) if args.weighted else torch.ones(e)
    adj = torch.sparse_coo_tensor(torch.stack([dst, src]), w, (n, n)).coalesce().to_sparse_csr()
    x = torch.randn(n, c, requires_grad=args.backward)
    wcol = w.view(-1, 1)

    def gather_scatter(x: torch.Tensor) -> torch.Tensor:
        msg = x.index_select(0, src)
        if args.weighted:
            msg = msg * wcol
        return x.new_zeros(n, c).index_add_(0, dst, msg)

    def gather_scatter_add(x: torch.Tensor) -> torch.Tensor:  # PyG's spelling
        msg = x.index_select(0, src)
        if args.weighted:
            msg = msg * wcol
        return x.new_zeros(n, c).scatter_add_(0, dst.view(-1, 1).expand_as(msg), msg)

    def sparse_mm(x: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(adj, x)

    fns = {"gather+scatter": gather_scatter, "gather+scatter_add_": gather_scatter_add, "sparse.mm": sparse_mm}
    ref = gather_scatter(x)
    torch.testing.assert_close(sparse_mm(x), ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(gather_scatter_add(x), ref, rtol=1e-5, atol=1e-4)
    grad = torch.randn_like(ref).detach()
    stmt = "fn(x).backward(grad); x.grad = None" if args.backward else "fn(x)"
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            t = benchmark.Timer(stmt=stmt, globals={"fn": fn, "x": x, "grad": grad},
                                num_threads=args.threads, label=label, sub_label=name)
            rounds[name].append(t.blocked_autorange(min_run_time=args.min_run_time).median * 1e6)
    medians = {k: statistics.median(v) for k, v in rounds.items()}
    cells = ", ".join(f"{k} {v:9.1f} us" for k, v in medians.items())
    spread = []
    for k in ("gather+scatter", "gather+scatter_add_"):
        ratios = [a / b for a, b in zip(rounds[k], rounds["sparse.mm"])]
        spread.append(f"{k}/sparse.mm = {medians[k] / medians['sparse.mm']:.2f} "
                      f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")
    print(f"{label:14s} N={n:6d} E={e:7d} C={c:4d}  {cells}  " + ", ".join(spread))


if __name__ == "__main__":
    main()
