"""A rule's documentation page, rendered from its docstring.

One renderer for ``fxlint explain CODE`` and for ``docs/rules/FXLnnn.md``
(``fxlint docs``), so the two never differ. The docstring supplies the summary
(first line) and the sections ``## What it does``, ``## Why is this bad?``,
``## Example``, ``## Use instead``, ``## When it is intentional``; the page adds
the default severity, the family, and how to silence the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import Rule

REQUIRED_SECTIONS = (
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## When it is intentional",
)

FAMILIES = {
    "FXL1": "FXL1xx implicit copies",
    "FXL2": "FXL2xx layout before compute",
    "FXL3": "FXL3xx gradient breaks",
    "FXL4": "FXL4xx advanced-index copies",
    "FXL5": "FXL5xx capture",
    "FXL6": "FXL6xx distributed",
    "FXL7": "FXL7xx the compiled program",
}


def family(code: str) -> str:
    return FAMILIES.get(code[:4], f"{code[:4]}xx")


def missing_sections(rule: Rule) -> list[str]:
    """Required docstring sections the rule's documentation lacks."""
    lines = {line.strip() for line in rule.doc.splitlines()}
    return [s for s in REQUIRED_SECTIONS if s not in lines]


def render_rule(rule: Rule) -> str:
    """The Markdown page of ``rule``."""
    body = "\n".join(rule.doc.splitlines()[1:]).strip()
    code = rule.code
    parts = [
        f"# {code} {rule.name}",
        "",
        f"*{rule.summary}*",
        "",
        f"Default severity: **{rule.severity}** · Family: {family(code)}",
        "",
    ]
    if body:
        parts += [body, ""]
    parts += fix_safety(rule)
    parts += [
        "## How to silence it",
        "",
        f"- One site: put `# fxlint: ignore[{code}]` on the reported line (or any line of its statement).",
        f"- Some files: `per-file-ignores = {{ \"legacy/*.py\" = [\"{code}\"] }}` under `[tool.fxlint]` "
        "in `pyproject.toml`.",
        f"- The whole project: `ignore = [\"{code}\"]` under `[tool.fxlint]`, or `fxlint lint --ignore {code}`.",
        f"- Another severity: `severity = {{ {code} = \"info\" }}` under `[tool.fxlint]`.",
        "- Adopting fxlint on existing code: `fxlint lint TARGET --baseline fxlint-baseline.json "
        "--write-baseline` records today's findings; later runs with `--baseline` report only new ones.",
        "",
    ]
    return "\n".join(parts)


def fix_safety(rule: Rule) -> list[str]:
    """The page's "Fix safety" section, from the fix the rule declares."""
    fix = rule.fix
    if fix.rewrite is None:
        return ["## Fix safety", "",
                "No automatic fix: the finding says what to change (`fxlint fix` does not rewrite it).", ""]
    from ..registry import default_registry

    when = "where it can prove its preconditions" if fix.availability == "sometimes" else "at every site"
    meaning = ("the rewritten program cannot be told apart from the original" if fix.applicability == "safe"
               else "values and gradients are equal, but something a caller could observe changes")
    lines = ["## Fix safety", "",
             f"`fxlint fix` and the backend's `rewrite` option apply the `{fix.rewrite}` rewrite {when}, and "
             "verify each one against the original on the example inputs (outputs and gradients); one that "
             "differs is rolled back.",
             "",
             f"It is **{fix.applicability}** ({meaning}): {fix.why}. "
             "`fxlint fix --safe-only` (`safe_only=True`) applies only safe rewrites.", ""]
    rw = default_registry().rewrite_for(rule) if rule.code in default_registry().codes() else None
    if rw is not None and rw.preconditions:
        lines += ["Before it changes anything, the rewrite proves on the graph that:", ""]
        lines += [f"- {p}" for p in rw.preconditions]
        lines.append("")
    return lines


def render_index(rules: Iterable[Rule]) -> str:
    """``docs/rules/README.md``: the table of every rule."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = [f"| [{r.code}]({r.code}.md) | {r.name} | {r.severity} | {cell(r.fix.summary)} | {cell(r.summary)} |"
            for r in rules]
    return "\n".join([
        "# fxlint rules",
        "",
        "Generated from the rule docstrings by `fxlint docs`; do not edit by hand.",
        "`fxlint explain CODE` prints the same pages.",
        "",
        "| code | name | default | fix | summary |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])


def pages(rules: Iterable[Rule]) -> dict[str, str]:
    """File name -> text of every page ``fxlint docs`` writes."""
    rules = list(rules)
    out = {f"{r.code}.md": render_rule(r) for r in rules}
    out["README.md"] = render_index(rules)
    return out
