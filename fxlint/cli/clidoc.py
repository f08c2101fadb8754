"""The command-line reference page, rendered from the argparse parsers.

``fxlint docs`` writes it to ``docs/cli.md`` next to the rule pages, so the
reference lists every subcommand and option the installed ``fxlint`` accepts,
with the help text, the choices and the defaults the parser itself holds:
nothing is copied by hand, and ``fxlint docs --check`` (run by the test suite)
fails when a new option has not been regenerated into the page.
"""

from __future__ import annotations

import argparse
import re

_WIDTH = 100  # usage lines are wrapped at a fixed width, so the page does not depend on the terminal


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Name -> parser of every subcommand, in ``--help`` order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices.items())
    return {}


def _help_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def documented_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions a page lists: every option and positional, less ``--help`` and hidden ones."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
            and a.help is not argparse.SUPPRESS]


def _md(text: str) -> str:
    """Escape Markdown outside `code spans`; table cells also lose their pipes and newlines."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part.replace("|", "\\|"))
        else:
            part = part.replace("\\", "\\\\")
            for ch in "*_[]<>|":
                part = part.replace(ch, "\\" + ch)
            out.append(part)
    return " ".join("".join(out).split())


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog=parser.prog, width=_WIDTH, max_help_position=30)


def usage(parser: argparse.ArgumentParser) -> str:
    fmt = _formatter(parser)
    fmt.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return fmt.format_help().strip()


def _names(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    fmt = _formatter(parser)
    if action.nargs == 0:
        return ", ".join(f"`{s}`" for s in action.option_strings)
    args = fmt._format_args(action, fmt._get_default_metavar_for_optional(action))
    return ", ".join(f"`{s} {args}`" for s in action.option_strings)


def _default(action: argparse.Action) -> str:
    d = action.default
    if action.nargs == 0 or d is None or d is argparse.SUPPRESS or d == [] or isinstance(d, bool):
        return ""
    return f"`{d}`"


def _meaning(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = _formatter(parser)._expand_help(action) if action.help else ""
    out = [_md(text)] if text else []
    if action.choices is not None and action.metavar is not None and not isinstance(action.choices, dict):
        out.append("One of " + ", ".join(f"`{c}`" for c in action.choices))  # the metavar hides them
    if isinstance(action, (argparse._AppendAction, argparse._ExtendAction)):
        out.append("repeatable")
    return "; ".join(out)


def _section(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    positionals = [a for a in documented_actions(parser) if not a.option_strings]
    options = [a for a in documented_actions(parser) if a.option_strings]
    for title, actions in (("Arguments", positionals), ("Options", options)):
        if not actions:
            continue
        lines += [f"**{title}**", "", "| argument | meaning | default |", "| --- | --- | --- |"]
        lines += [f"| {_names(a, parser)} | {_meaning(a, parser)} | {_default(a)} |" for a in actions]
        lines.append("")
    return lines


def render_cli(parser: argparse.ArgumentParser) -> str:
    """The Markdown of ``docs/cli.md`` for ``parser`` (the ``fxlint`` parser)."""
    subs = subcommands(parser)
    helps = _help_of(parser)
    lines = [
        "# CLI reference",
        "",
        "Generated from the command's own argument parsers by `fxlint docs`; do not edit by hand.",
        "`fxlint COMMAND --help` prints the same. The [command line guide](command-line.md) shows them at work.",
        "",
        "```text",
        usage(parser),
        "```",
        "",
        _md(parser.description or ""),
        "",
        "| command | what it does |",
        "| --- | --- |",
        *[f"| [`{name}`](#fxlint-{name}) | {_md(helps.get(name, ''))} |" for name in subs],
        "",
        *_section(parser),
    ]
    if parser.epilog:
        lines += ["```text", parser.epilog.strip(), "```", ""]
    for name, sp in subs.items():
        lines += [f"## fxlint {name}", "", _md(helps.get(name, "")), ""]
        if sp.description:
            lines += [_md(sp.description), ""]
        lines += ["```text", usage(sp), "```", ""]
        lines += _section(sp)
        if sp.epilog and sp.epilog.strip() != (parser.epilog or "").strip():
            lines += ["```text", sp.epilog.strip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"
