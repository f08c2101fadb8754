"""Regenerate docs/img/report.png: the HTML report of a bundled model, as a browser shows it.

    make docs-screenshot
    .venv/bin/python docs/_tools/report_screenshot.py [--model models/transformer_attention.py:make] [-o docs/img/report.png]

Runs `fxlint report` on the model (lint with the runtime audit, one self-contained HTML page), opens the page
in headless Chromium through Playwright (the browser the tests use: Debian's `chromium`, found on PATH; no
browser is downloaded) and saves the top of the page, the summary and the first source lines with their
findings, as a PNG. Exit 1 with the reason when there is no browser.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-default-apps"]


def browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/transformer_attention.py:make", help="the TARGET to report on")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "img" / "report.png"), help="the PNG to write")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1700, help="the height of the page's top that is shot")
    args = ap.parse_args(argv)
    exe = browser()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("report_screenshot: playwright is not installed (pip install -r requirements-dev.txt)", file=sys.stderr)
        return 1
    if exe is None:
        print("report_screenshot: no Chromium on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 1

    from fxlint.cli.app import main as fxlint_main

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        rc = fxlint_main(["report", args.model, "-o", str(html)])
        if rc != 0:
            print(f"report_screenshot: fxlint report exited {rc}", file=sys.stderr)
            return 1
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=exe, args=ARGS, timeout=60_000)
            try:
                page = b.new_page(viewport={"width": args.width, "height": args.height})
                page.goto(html.as_uri(), wait_until="load", timeout=60_000)
                page.wait_for_selector("html[data-ready='1']", timeout=60_000)
                out = Path(args.output)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=False)
            finally:
                b.close()
    print(f"report_screenshot: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
