"""Write the benchmark results of the documentation (docs/benchmarks.md) from a real `fxlint bench` run.

    fxlint bench --zoo --json out/bench_zoo.json --plot out/bench_zoo.png
    fxlint bench --lint-speed --json out/lint_speed.json
    python bench/readme_results.py out/bench_zoo.json [--lint-speed out/lint_speed.json] [--page docs/benchmarks.md]

Replaces the text between ``<!-- bench-results:start -->`` and
``<!-- bench-results:end -->`` in the page with the command, the machine line
and a table per model and mode: speed of the rewritten variant against the
original (eager and Inductor), and the bytes the runtime audit saw copied per
call, original -> rewritten. Failed variants are listed, never averaged away.
With ``--lint-speed``, the text between ``<!-- lint-speed:start -->`` and
``<!-- lint-speed:end -->`` gets the tables of ``fxlint bench --lint-speed``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # fxlint from this checkout

from fxlint.benchmarks.lint_speed import LintSpeed, StackPoint, SyntheticPoint, render  # noqa: E402
from fxlint.tensor.info import human_bytes  # noqa: E402

START, END = "<!-- bench-results:start -->", "<!-- bench-results:end -->"
LS_START, LS_END = "<!-- lint-speed:start -->", "<!-- lint-speed:end -->"


def section(data: dict, command: str) -> str:
    m = data["machine"]
    rows: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in data["results"]:
        rows[(r["model"], r["mode"])][r["variant"]] = r
    lines = [
        f"Command: `{command}`",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, Python {m.get('python', '?')}"
        + (f", GPU {m['cuda']}" if m.get("cuda") else " (CPU only)") + ".",
        "",
        "| model | mode | eager: rewritten vs original | Inductor: fxlint+rewrite vs Inductor | copied per call, original -> rewritten (eager) | rewrites |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    failed: list[str] = []
    notes: list[str] = []
    overhead: list[float] = []
    noise: list[float] = []
    for (model, mode), v in sorted(rows.items()):
        if all(x.get("skipped") for x in v.values()):
            lines.append(f"| {model} | {mode} | skipped | skipped | - | {next(iter(v.values()))['skipped']} |")
            continue
        for x in v.values():
            if not x["correct"] or x["error"]:
                failed.append(f"{model} {mode} {x['variant']}: {x['error'] or 'results differ'}")
            if x.get("note"):
                notes.append(f"{model} {mode} {x['variant']}: {x['note']} (max output difference "
                             f"{x['max_out_diff']:.1e}, gradient {x['max_grad_diff'] or 0:.1e})")

        def ratio(name: str) -> str:
            x = v.get(name)
            if x and x.get("skipped"):
                return f"skipped: {x['skipped']}"
            if not x or not x.get("ratio"):
                return "-"
            lo, hi = x.get("ratio_lo"), x.get("ratio_hi")
            if lo is not None and hi is not None and lo <= 1.0 <= hi:  # the rounds' spread holds 1.00x
                return f"{x['ratio']:.2f}x (noise: {lo:.2f}-{hi:.2f}x)"
            return f"{x['ratio']:.2f}x"

        orig, new = v.get("eager", {}), v.get("eager+rewrite", {})
        copied = f"{human_bytes(orig.get('copied_bytes'))} -> {human_bytes(new.get('copied_bytes'))}"
        applied = ", ".join(sorted({a.split()[0] for a in new.get("rewrites") or []}))
        eager = ratio("eager+rewrite")
        if not applied and "eager+rewrite" in v and not new.get("skipped"):
            # nothing was rewritten: the ratio would only compare the captured graph's call
            # overhead with the module's (it is in the JSON); the Inductor one shows the noise
            overhead.append(new.get("ratio") or 0)
            if v.get("inductor+rewrite", {}).get("ratio"):
                noise.append(v["inductor+rewrite"]["ratio"])
            eager = "no rewrite"
        lines.append(f"| {model} | {mode} | {eager} | {ratio('inductor+rewrite')} | {copied} | "
                     f"{applied or 'none'} |")
    lines.append("")
    if overhead:
        lines.append(
            f"Rows without a rewrite run the same computation in every variant: their Inductor ratio is "
            f"this machine's noise ({min(noise):.2f}x to {max(noise):.2f}x here), and their eager ratio, "
            f"left out above, would compare the captured GraphModule's call overhead with the module's "
            f"({min(overhead):.2f}x to {max(overhead):.2f}x on these small models; in the JSON)."
        )
        lines.append("")
    lines.append("Failed variants: " + ("; ".join(failed) if failed else "none (every variant matched the "
                                                                          "original eager outputs and gradients, "
                                                                          "or plain Inductor's for inductor+rewrite)."))
    if notes:
        lines.append("")
        lines.append("Notes: " + "; ".join(notes) + ".")
    return "\n".join(lines)


def lint_speed_section(data: dict, command: str) -> str:
    from dataclasses import fields

    def load(cls: type, d: dict) -> object:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    result = LintSpeed(machine=data["machine"], rules=data.get("rules", 0),
                       stack=[load(StackPoint, p) for p in data["stack"]],
                       synthetic=[load(SyntheticPoint, p) for p in data["synthetic"]])
    return f"Command: `{command}`\n\n```\n{render(result)}\n```"


def replace_between(text: str, start: str, end: str, body: str, name: str) -> str:
    if start not in text or end not in text:
        raise SystemExit(f"{name} has no {start} ... {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return head + start + "\n" + body + "\n" + end + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="the JSON written by fxlint bench --json")
    ap.add_argument("--lint-speed", metavar="JSON", help="the JSON written by fxlint bench --lint-speed --json")
    # --readme: its name from when the tables lived in README.md
    ap.add_argument("--page", "--readme", dest="readme", default="docs/benchmarks.md",
                    help="the Markdown file whose marked sections get the tables (default docs/benchmarks.md)")
    ap.add_argument("--command", default="fxlint bench --zoo --json out/bench_zoo.json --plot out/bench_zoo.png")
    args = ap.parse_args(argv)
    readme = Path(args.readme)
    text = readme.read_text()
    text = replace_between(text, START, END, section(json.loads(Path(args.json).read_text()), args.command),
                           args.readme)
    if args.lint_speed:
        text = replace_between(text, LS_START, LS_END,
                               lint_speed_section(json.loads(Path(args.lint_speed).read_text()),
                                                  "fxlint bench --lint-speed --json out/lint_speed.json"),
                               args.readme)
    readme.write_text(text)
    print(f"updated {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
