"""The documentation's facts, without building the site (tests/test_site.py builds it).

The generated pages: docs/rules/FXLnnn.md for every registered rule (from the docstrings; `fxlint explain
CODE` prints the same page) and docs/cli.md (from the argument parsers), checked up to date. The README: short,
its links resolve, its results rows are the generated benchmark rows. The hand-written pages: what they list
(backend options, configuration keys) is what the code accepts."""

from __future__ import annotations

import shutil

import pytest

from fxlint.cli.app import build_parser, main
from fxlint.cli.clidoc import documented_actions, subcommands
from fxlint.cli.commands.docs import differences
from fxlint.cli.commands.rules import explain_text
from fxlint.registry import all_rules
from fxlint.renderers.ruledoc import REQUIRED_SECTIONS, missing_sections
from tests.conftest import ROOT

SITE = ROOT / "docs"
DOCS = SITE / "rules"


def test_checked_in_generated_pages_are_up_to_date():
    diff = differences(SITE)
    assert not diff, f"docs is out of date ({'; '.join(diff)}); run `fxlint docs` to regenerate it"


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
    to run; writing adds its page; a page of a rule that no longer exists is removed; a CLI page
    edited by hand is noticed and rewritten."""
    out = tmp_path / "docs"
    shutil.copytree(DOCS, out / "rules")
    shutil.copy(SITE / "cli.md", out / "cli.md")
    shutil.copy(SITE / "report.schema.json", out / "report.schema.json")
    (out / "rules" / "FXL401.md").write_text("edited by hand\n")
    (out / "rules" / "FXL119.md").write_text("a rule that was removed\n")
    (out / "cli.md").write_text("edited by hand\n")
    assert main(["docs", "--check", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "rules/FXL990.md missing" in err and "rules/FXL401.md differs" in err and "rules/FXL119.md stale" in err
    assert "rules/README.md differs" in err and "cli.md differs" in err and "report.schema.json differs" in err
    assert f"run `fxlint docs --output {out}`" in err

    assert main(["docs", "--output", str(out)]) == 0
    assert (out / "rules" / "FXL990.md").read_text() == explain_text("FXL990")
    assert not (out / "rules" / "FXL119.md").exists()
    assert (out / "cli.md").read_text() == (SITE / "cli.md").read_text()
    assert main(["docs", "--check", "--output", str(out)]) == 0
    assert "up to date" in capsys.readouterr().err


def test_docs_into_a_folder_that_cannot_be_written(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["docs", "--output", str(blocker / "docs")]) == 2
    assert "fxlint: error: cannot write" in capsys.readouterr().err


# --------------------------------------------------------------------------- the CLI reference


def _cli_items():
    parser = build_parser()
    items = [("fxlint", s) for a in documented_actions(parser) for s in a.option_strings]
    for name, sub in subcommands(parser).items():
        items.append((name, f"## fxlint {name}"))
        for action in documented_actions(sub):
            items += [(name, s) for s in action.option_strings] or [(name, action.metavar or action.dest)]
    return items


def test_cli_page_lists_every_subcommand_and_option():
    """Every subcommand has its section, and every option of it (and every positional) is listed in that
    section: a new option is in the reference as soon as `fxlint docs` runs."""
    page = (SITE / "cli.md").read_text()
    sections = {"fxlint": page.split("\n## fxlint ", 1)[0]}
    for chunk in page.split("\n## fxlint ")[1:]:
        sections[chunk.split("\n", 1)[0]] = "## fxlint " + chunk
    missing = []
    for cmd, item in _cli_items():
        where = sections.get(cmd, "")
        if (item not in where) if item.startswith("## ") else (f"`{item}" not in where):
            missing.append((cmd, item))
    assert not missing, f"not in docs/cli.md: {missing}; run `fxlint docs`"
    assert set(sections) == {"fxlint", *subcommands(build_parser())}


# --------------------------------------------------------------------------- README


README = ROOT / "README.md"


def test_readme_is_short_and_has_what_the_issue_asks():
    text = README.read_text()
    assert len(text.splitlines()) < 200, "README.md must stay under 200 lines: put the details in docs/"
    for needed in ("make demo", "make test", 'backend="fxlint"', "fxlint lint", "fxlint.lint(", "## Results",
                   "## Real-zoo census", "<!-- census:start -->", "<!-- census:end -->", "docs/index.md"):
        assert needed in text, needed


def _relative_links(path):
    import re

    text = path.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t and not t.startswith("#")]


def test_readme_links_resolve():
    links = _relative_links(README)
    assert len(links) >= 10
    broken = [t for t in links if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not broken, f"README.md links to missing files: {broken}"


def test_readme_results_rows_are_the_generated_benchmark_rows():
    """The README's results table is a selection of the rows bench/readme_results.py wrote into
    docs/benchmarks.md from a real run: never a number typed in by hand."""
    bench = (SITE / "benchmarks.md").read_text()
    generated = bench.split("<!-- bench-results:start -->")[1].split("<!-- bench-results:end -->")[0]
    results = README.read_text().split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in results.splitlines() if r.startswith("| ") and not r.startswith("| model") and "---" not in r]
    assert rows and all(r in generated.splitlines() for r in rows), [r for r in rows if r not in generated]
    header = next(r for r in results.splitlines() if r.startswith("| model"))
    assert header in generated.splitlines()


# --------------------------------------------------------------------------- hand-written pages vs the code


def test_backend_page_lists_every_backend_option():
    import dataclasses

    from fxlint.backend import BackendOptions

    page = (SITE / "backend.md").read_text()
    options = [f.name for f in dataclasses.fields(BackendOptions) if f.name != "passthrough"]
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert options and not [o for o in options if not any(f"`{o}`" in r.split(" | ")[0] for r in rows)]


def test_configuration_page_shows_every_config_key():
    from fxlint.project.config import KEYS

    page = (SITE / "configuration.md").read_text()
    toml = page.split("```toml\n", 1)[1].split("```", 1)[0]
    assert not [k for k in KEYS if f"\n{k} = " not in "\n" + toml], "a [tool.fxlint] key missing from the example"


def test_every_docs_page_is_in_the_site_nav_or_a_rule_page():
    """A page nobody can reach is a page nobody reads: every Markdown file in docs/ is in mkdocs.yml's nav,
    or a rule page reached from the rule index."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for n in node:
                yield from walk(n)
        elif isinstance(node, dict):
            for v in node.values():
                yield from walk(v)

    listed = set(walk(nav))
    pages = {p.relative_to(SITE).as_posix() for p in SITE.rglob("*.md") if "_tools" not in p.parts}
    unlisted = sorted(p for p in pages - listed if not (p.startswith("rules/FXL")))
    assert not unlisted, f"docs pages not in mkdocs.yml's nav: {unlisted}"
    assert listed <= pages, f"nav names missing pages: {sorted(listed - pages)}"


def test_page_shape():
    page = explain_text("FXL401")
    assert page.startswith("# FXL401 index-as-slice\n")
    assert "Default severity: **warning**" in page and "FXL4xx advanced-index copies" in page
    for section in (*REQUIRED_SECTIONS, "## How to silence it"):
        assert section in page
    assert "# fxlint: ignore[FXL401]" in page and 'ignore = ["FXL401"]' in page and "--baseline" in page


# --------------------------------------------------------------------------- sample outputs are real


def _samples():
    """Every ```text block that starts with `$ fxlint lint ...` in the README and the docs: (page, argv, lines)."""
    import re
    import shlex

    out = []
    for page in [README, *sorted(SITE.glob("*.md"))]:
        for block in re.findall(r"```text\n(\$ fxlint lint .*?)```", page.read_text(), flags=re.S):
            first, *lines = block.rstrip("\n").split("\n")
            out.append((page.relative_to(ROOT).as_posix(), shlex.split(first[2:])[1:], lines))
    return out


def test_sample_outputs_are_what_fxlint_prints(capsys, monkeypatch):
    """The outputs shown in the README and the docs are what `fxlint lint` prints today (at 120 columns).
    A line `[...]` elides findings; everything else must appear, in order."""
    samples = _samples()
    assert {page for page, _, _ in samples} >= {"README.md", "docs/getting-started.md", "docs/rule-families.md"}
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(ROOT)  # the samples name models/ relative to the checkout, and so do the locations
    for page, argv, lines in samples:
        main([*argv, "--fail-on", "never"])
        printed = capsys.readouterr().out.rstrip("\n").split("\n")
        shown = [line for line in lines if not line.startswith("[...")]
        if len(shown) == len(lines):
            assert printed == shown, f"{page}: the sample of `fxlint lint {' '.join(argv)}` is out of date"
        else:
            it = iter(printed)
            assert all(line in it for line in shown), \
                f"{page}: the sample of `fxlint lint {' '.join(argv)}` is out of date"
