"""Rule documentation: docs/rules/FXLnnn.md for every registered rule, generated from the
docstrings, checked here to be up to date; `fxlint explain CODE` prints the same page."""

from __future__ import annotations

import shutil

import pytest

from fxlint.cli import main
from fxlint.commands.docs import differences
from fxlint.commands.rules import explain_text
from fxlint.registry import all_rules
from fxlint.ruledoc import REQUIRED_SECTIONS, missing_sections
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "rules"


def test_checked_in_rule_docs_are_up_to_date():
    diff = differences(DOCS)
    assert not diff, f"docs/rules is out of date ({'; '.join(diff)}); run `fxlint docs` to regenerate it"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_a_page_equal_to_explain(rule):
    page = DOCS / f"{rule.code}.md"
    assert page.is_file(), f"no {page.relative_to(ROOT)}; run `fxlint docs`"
    assert page.read_text(encoding="utf-8") == explain_text(rule.code)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_docstring_has_the_sections(rule):
    assert rule.summary and rule.summary != rule.name, f"{rule.code}: the docstring's first line is the summary"
    assert missing_sections(rule) == [], f"{rule.code} docstring lacks {missing_sections(rule)}"


def test_every_code_listed_by_fxlint_rules_has_a_page(capsys):
    import json

    assert main(["rules", "--format", "json"]) == 0
    listed = [r["code"] for r in json.loads(capsys.readouterr().out)]
    assert listed and all((DOCS / f"{code}.md").is_file() for code in listed)
    index = (DOCS / "README.md").read_text()
    assert all(f"[{code}]({code}.md)" in index for code in listed)


def test_check_and_write_cover_whatever_rules_are_registered(capsys, tmp_path, mul_rule):
    """A rule added by someone else (here a throwaway FXL990) makes --check fail with the command
    to run; writing adds its page; a page of a rule that no longer exists is removed."""
    out = tmp_path / "rules"
    shutil.copytree(DOCS, out)
    (out / "FXL401.md").write_text("edited by hand\n")
    (out / "FXL123.md").write_text("a rule that was removed\n")
    assert main(["docs", "--check", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "FXL990.md missing" in err and "FXL401.md differs" in err and "FXL123.md stale" in err
    assert "README.md differs" in err and f"run `fxlint docs --output {out}`" in err

    assert main(["docs", "--output", str(out)]) == 0
    assert (out / "FXL990.md").read_text() == explain_text("FXL990")
    assert not (out / "FXL123.md").exists()
    assert main(["docs", "--check", "--output", str(out)]) == 0
    assert "up to date" in capsys.readouterr().err


def test_page_shape():
    page = explain_text("FXL401")
    assert page.startswith("# FXL401 index-as-slice\n")
    assert "Default severity: **warning**" in page and "FXL4xx advanced-index copies" in page
    for section in (*REQUIRED_SECTIONS, "## How to silence it"):
        assert section in page
    assert "# fxlint: ignore[FXL401]" in page and 'ignore = ["FXL401"]' in page and "--baseline" in page
