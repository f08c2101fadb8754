"""The documentation site, built as `make docs` builds it: `mkdocs build --strict` (a broken link, a missing
page, a nav entry without its file or a failed docstring fails the build), then the built pages are read:
every registered rule has its page and its row in the index, every CLI subcommand and option is in the CLI
reference, the Python API rendered the docstrings, the report screenshot is there.

One build per run (module fixture, about 15 s); skipped with the reason when MkDocs is not installed
(`pip install -r requirements-dev.txt`, or the `docs` extra)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys

import pytest

from fxlint.cli.app import build_parser
from fxlint.cli.clidoc import documented_actions, subcommands
from fxlint.registry import all_rules
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (pip install -r requirements-dev.txt)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (pip install -r requirements-dev.txt)")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (pip install -r requirements-dev.txt)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def _text(path) -> str:
    """The visible text of a built page, tags dropped and entities decoded."""
    body = path.read_text(encoding="utf-8")
    body = re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_every_page_is_built(site):
    pages = [p.relative_to(ROOT / "docs").with_suffix(".html")
             for p in (ROOT / "docs").rglob("*.md") if "_tools" not in p.parts]
    built = {p for p in pages if (site / p).is_file()}
    # docs/rules/README.md is the folder's index page
    missing = [p for p in pages if p not in built and p.as_posix() != "rules/README.html"]
    assert not missing, f"not built: {missing}"
    assert (site / "rules" / "index.html").is_file()
    assert not (site / "_tools").exists(), "the docs' helper scripts are not part of the site"


def test_every_registered_rule_has_its_page_and_index_row(site):
    index = (site / "rules" / "index.html").read_text(encoding="utf-8")
    for rule in all_rules():
        page = site / "rules" / f"{rule.code}.html"
        assert page.is_file(), f"no page for {rule.code}"
        assert f"{rule.code} {rule.name}" in _text(page)
        assert f'href="{rule.code}.html"' in index, f"{rule.code} is not in the rule index"
    assert "fix" in _text(site / "rules" / "index.html").lower()


def test_cli_reference_lists_every_subcommand_and_option(site):
    text = _text(site / "cli.html")
    parser = build_parser()
    missing = [s for a in documented_actions(parser) for s in a.option_strings if s not in text]
    for name, sub in subcommands(parser).items():
        section = text.split(f"fxlint {name}¶", 1)
        if len(section) < 2:
            missing.append(f"section fxlint {name}")
            continue
        body = re.split(r"\nfxlint \w+¶", section[1], maxsplit=1)[0]
        for action in documented_actions(sub):
            for item in action.option_strings or [action.metavar or action.dest]:
                if item not in body:
                    missing.append(f"{name} {item}")
    assert not missing, f"not in the built CLI reference: {missing}; run `fxlint docs`"


def test_python_api_is_rendered_from_the_docstrings(site):
    page = (site / "python-api.html").read_text(encoding="utf-8")
    for obj in ("fxlint.lint", "fxlint.audit", "fxlint.report", "fxlint.Finding", "fxlint.Report",
                "fxlint.collect", "fxlint.rewrite.engine.rewrite", "fxlint.testing.assert_no_findings"):
        assert f'id="{obj}"' in page, f"mkdocstrings did not render {obj}"
    text = _text(site / "python-api.html")
    assert "Project configuration" in text and "confirm=True" in text  # from fxlint.lint's docstring


def test_benchmarks_page_shows_the_report_screenshot(site):
    page = (site / "benchmarks.html").read_text(encoding="utf-8")
    assert 'src="img/report.png"' in page
    png = site / "img" / "report.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
