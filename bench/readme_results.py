"""Write the README's benchmark results section from a real `fxlint bench` run.

    fxlint bench --zoo --json out/bench_zoo.json --plot out/bench_zoo.png
    python bench/readme_results.py out/bench_zoo.json [--readme README.md] [--command "..."]

Replaces the text between ``<!-- bench-results:start -->`` and
``<!-- bench-results:end -->`` in the README with the command, the machine line
and a table per model and mode: speed of the rewritten variant against the
original (eager and Inductor), and the bytes the runtime audit saw copied per
call, original -> rewritten. Failed variants are listed, never averaged away.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

START, END = "<!-- bench-results:start -->", "<!-- bench-results:end -->"


def human(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


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
    failed = []
    for (model, mode), v in sorted(rows.items()):
        if any(x.get("skipped") for x in v.values()):
            lines.append(f"| {model} | {mode} | skipped | skipped | - | {next(iter(v.values()))['skipped']} |")
            continue
        for x in v.values():
            if not x["correct"] or x["error"]:
                failed.append(f"{model} {mode} {x['variant']}: {x['error'] or 'results differ'}")

        def ratio(name: str) -> str:
            x = v.get(name)
            return f"{x['ratio']:.2f}x" if x and x.get("ratio") else "-"

        orig, new = v.get("eager", {}), v.get("eager+rewrite", {})
        copied = f"{human(orig.get('copied_bytes'))} -> {human(new.get('copied_bytes'))}"
        applied = ", ".join(sorted({a.split()[0] for a in new.get("rewrites") or []})) or "none"
        lines.append(f"| {model} | {mode} | {ratio('eager+rewrite')} | {ratio('inductor+rewrite')} | {copied} | {applied} |")
    lines.append("")
    lines.append("Failed variants: " + ("; ".join(failed) if failed else "none (every variant matched the "
                                                                          "original eager outputs and gradients)."))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="the JSON written by fxlint bench --json")
    ap.add_argument("--readme", default="README.md")
    ap.add_argument("--command", default="fxlint bench --zoo --json out/bench_zoo.json --plot out/bench_zoo.png")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.json).read_text())
    readme = Path(args.readme)
    text = readme.read_text()
    if START not in text or END not in text:
        print(f"{args.readme} has no {START} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + START + "\n" + section(data, args.command) + "\n" + END + tail)
    print(f"updated {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
