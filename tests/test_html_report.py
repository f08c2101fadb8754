"""The HTML report, opened in a real browser (headless Chromium driven by Playwright).

The page must render without a console error, show the same numbers as the JSON report, and
highlight the line of a known finding; a screenshot is saved to ``out/`` for review. Without a
browser the browser tests are skipped with the reason (and fail instead when
``FXLINT_REQUIRE_BROWSER=1``, which ``.ci/run`` sets after installing Chromium).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.cli.app import main
from fxlint.renderers.html import render_html
from fxlint.renderers.json import report_dict
from fxlint.reporting.grouping import group_findings
from tests.conftest import line_of

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "out"
MODELS = ROOT / "models"


def _browser_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _need_browser():
    """(playwright's sync API, the browser's path), or skip (fail under FXLINT_REQUIRE_BROWSER=1)."""
    why = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = "playwright is not installed (pip install -r requirements-dev.txt)"
    exe = _browser_path()
    if why is None and exe is None:
        why = "no Chromium on this machine (Debian: apt-get install chromium; .ci/run installs it)"
    if why is not None:
        if os.environ.get("FXLINT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser test needs a browser: {why}")
        pytest.skip(f"browser test skipped: {why}")
    return sync_playwright, exe


_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-default-apps"]


def _open(path: Path, screenshot: Path | None = None):
    """Load ``path`` in headless Chromium; return (console messages, failed requests, load seconds, page facts)."""
    sync_playwright, exe = _need_browser()
    messages: list[tuple[str, str]] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: messages.append((m.type, m.text)))
            page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
            page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            t0 = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_selector("html[data-ready='1']", timeout=60_000)
            seconds = time.perf_counter() - t0
            facts = page.evaluate("""() => ({
                cards: Object.fromEntries([...document.querySelectorAll('.card')].map(
                    c => [c.id.replace('card-', ''), c.getAttribute('data-value')])),
                hits: [...document.querySelectorAll('tr.hit')].map(r => ({
                    id: r.id, line: +r.getAttribute('data-line'), heat: +r.getAttribute('data-heat'),
                    bg: getComputedStyle(r.cells[1]).backgroundColor})),
                groups: document.querySelectorAll('#groups tbody tr').length,
                findingsShown: document.querySelectorAll('.fd').length,
                title: document.title,
            })""")
            # sorting works: click Bytes/call twice (descending, then ascending)
            header = page.locator("#groups thead th", has_text="Bytes/call")
            if header.count():
                header.click()
                header.click()
                facts["sorted_asc"] = page.evaluate(
                    "() => [...document.querySelectorAll('#groups tbody tr')].map("
                    "r => +r.cells[5].getAttribute('data-sort'))")
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return messages, requests, seconds, facts


def _report_for(name: str, train: bool = False):
    from fxlint.capture.target import load_target

    loaded = load_target(f"{MODELS / name}:make")
    return fxlint.lint(loaded.obj, loaded.inputs, confirm=True, train=train), loaded


def test_report_renders_in_a_browser_with_the_json_numbers_and_the_line_highlighted(tmp_path):
    path = tmp_path / "report.html"
    assert main(["report", f"{MODELS / 'transformer_attention.py'}:make", "-o", str(path)]) == 0
    report, _ = _report_for("transformer_attention.py")
    data = report_dict(report)
    messages, requests, seconds, facts = _open(path, OUT / "report-transformer_attention.png")
    assert [m for m in messages if m[0] in ("error", "pageerror", "warning")] == []
    assert requests == [], "the report loaded something from the network"
    s = data["summary"]
    cards = facts["cards"]
    assert int(cards["findings"]) == s["findings"] and int(cards["bytes-per-call"]) == s["bytes_per_call"]
    assert (int(cards["errors"]), int(cards["warnings"]), int(cards["infos"])) == (s["errors"], s["warnings"],
                                                                                   s["infos"])
    assert int(cards["confirmed"]) == s["confirmed"] and int(cards["refuted"]) == s["refuted"]
    assert facts["groups"] == len(data["groups"])
    # every finding's line is highlighted, with a heat colour (not the page background)
    lines = {f["line"] for f in data["findings"] if f["file"]}
    assert lines and lines <= {h["line"] for h in facts["hits"]}
    assert all(h["bg"] not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)") for h in facts["hits"])
    assert max(h["heat"] for h in facts["hits"]) == 5  # the most expensive line is the hottest
    assert facts["sorted_asc"] == sorted(facts["sorted_asc"])


def test_fix_first_is_above_the_fold_at_1280x800(tmp_path):
    """At 1280x800, without scrolling, the first thing on the page is the "fix first" block, whole, and each
    of its actions shows the line, what is wrong, the fix and the expected saving; the summary's cards (the
    ten equal boxes that once led the page) come after it."""
    report, _ = _report_for("transformer_attention.py")
    path = tmp_path / "fold.html"
    path.write_text(render_html(report))
    sync_playwright, exe = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(path.as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_selector("html[data-ready='1']", timeout=60_000)
            facts = page.evaluate("""() => {
                const box = e => { const b = e.getBoundingClientRect();
                                   return {top: b.top, bottom: b.bottom, height: b.height, text: e.innerText}; };
                const first = document.querySelector('#fix-first');
                const visible = [...document.querySelectorAll('main > *')].filter(
                    e => e.getBoundingClientRect().height > 0 && getComputedStyle(e).display !== 'none');
                const part = (li, sel) => { const e = li.querySelector(sel); return e ? box(e) : null; };
                return {
                    scrollY: window.scrollY, height: window.innerHeight,
                    block: first ? box(first) : null,
                    firstVisible: visible.length ? (visible[0].id || visible[0].className || visible[0].tagName) : null,
                    firstVisibleText: visible.length ? visible[0].innerText : null,
                    cards: document.querySelector('.cards') ? box(document.querySelector('.cards')) : null,
                    actions: first ? [...first.querySelectorAll('li.first')].map(li => ({
                        li: box(li), line: part(li, 'a'), what: part(li, '.what'), fix: part(li, '.fix'),
                        saving: part(li, '.saving')})) : [],
                };
            }""")
            OUT.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT / "report-above-the-fold.png"))
        finally:
            browser.close()
    assert facts["scrollY"] == 0 and facts["height"] == 800
    block = facts["block"]
    assert block is not None, "no fix-first block"
    assert 0 <= block["top"] and block["bottom"] <= 800, f"the fix-first block is not all above the fold: {block}"
    assert facts["firstVisibleText"].strip() == "Fix first", facts["firstVisible"]
    assert facts["cards"] is None or facts["cards"]["top"] > block["bottom"]  # the cards come after it
    expected = [g for g in group_findings(report.findings, sort="time") if g.severity.value != "info"][:3]
    assert len(facts["actions"]) == len(expected) == 3
    for action, g in zip(facts["actions"], expected):
        for part in ("line", "what", "fix", "saving"):
            box = action[part]
            assert box is not None and box["text"].strip(), (part, action)
            assert 0 <= box["top"] and box["bottom"] <= 800, (part, box)
        assert action["line"]["text"] == g.location
        assert action["saving"]["text"].startswith("saves ") and "per call" in action["saving"]["text"]
        assert "(measured)" in action["saving"]["text"]  # confirm=True: a time from the unprofiled call
        assert action["fix"]["text"].startswith("fix: ")


def test_a_model_with_graph_breaks_and_rewrites(tmp_path):
    """Several graphs, a graph break, a rewrite before/after: all on the page, no console error."""
    from fxlint.capture.target import load_target

    loaded = load_target(f"{MODELS / 'speech_separation.py'}:make")
    path = tmp_path / "speech.html"
    fxlint.report(loaded.obj, loaded.inputs, path)
    text = path.read_text()
    assert "index-to-slice" in text and "source (suggested edit)" in text  # the rewrite, before/after
    item, _ = _report_for("item_loss.py")
    path2 = tmp_path / "item.html"
    path2.write_text(render_html(item, title="item loss"))
    assert 'id="breaks"' in path2.read_text()
    for p in (path, path2):
        messages, requests, _, facts = _open(p)
        assert [m for m in messages if m[0] in ("error", "pageerror")] == [] and requests == []
        assert facts["hits"]


def test_thousands_of_findings_stay_a_page_a_browser_opens(tmp_path, write_module):
    """600 findings on 600 source lines of one file, plus 400 instances of one line: every group
    is on the page (with its finding under its line) and the page still opens quickly."""
    body = "\n".join("        x = x + x[:, [0, 1, 2, 3, 4, 5]]" for _ in range(600))
    path = write_module(f"""
import torch
import torch.nn as nn


class Long(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(400))

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x.transpose(0, 1)).transpose(0, 1)
{body}
        return x
""", name="long_model.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("long_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = fxlint.lint(mod.Long(), torch.randn(4, 6, 8), config=False)
    assert len(report.findings) >= 1000
    page = tmp_path / "many.html"
    page.write_text(render_html(report))
    size = page.stat().st_size
    messages, requests, seconds, facts = _open(page)
    print(f"{len(report.findings)} findings on {facts['groups']} lines: {size / 1e6:.2f} MB, loaded in {seconds:.2f} s")
    assert [m for m in messages if m[0] in ("error", "pageerror")] == []
    from fxlint.reporting.grouping import group_findings

    n = len(group_findings(report.findings))
    assert n >= 601 and facts["groups"] == n and facts["findingsShown"] == n and size < 20e6


def test_report_without_findings_and_bad_output(tmp_path, capsys):
    path = tmp_path / "clean.html"
    assert main(["report", f"{MODELS / 'clean_mlp.py'}:make", "-o", str(path)]) == 0
    assert 'id="no-findings"' in path.read_text()
    assert main(["report", f"{MODELS / 'clean_mlp.py'}:make", "-o", "/nonexistent/dir/r.html"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "fxlint: error: cannot write /nonexistent/dir/r.html: no such directory"


def test_the_page_is_self_contained():
    report, _ = _report_for("video_classification.py")
    text = render_html(report)
    for needle in ("<script src", "<link ", "http://", "https://", "@import", "url("):
        assert needle not in text, needle
    data = json.loads(__import__("html").unescape(text.split('id="fxlint-data">')[1].split("</script>")[0]))
    assert data["summary"] == report.summary()
    assert f'data-line="{line_of(MODELS / "video_classification.py", "self.stem(x)")}"' in text
