"""The ``fxlint`` command line.

Exit codes: 0 clean, 1 findings at or above ``--fail-on``, 2 usage or load
errors (one line on stderr; ``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import traceback
from typing import Any, Sequence

from . import __version__
from .errors import FxlintError, TargetError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

_EPILOG = """\
TARGET is path/to/file.py:Name or package.module:Name, where Name is an
nn.Module class (built without arguments), a factory returning a module or
(module, inputs), a module instance, GraphModule or ExportedProgram.

SPEC builds one input without eval: randn(2,3,224,224), randint(0,1000,(2,64)),
zeros(4,8,dtype=float16), randn(2,224,224,3).permute(0,3,1,2),
randn(8,3,32,32).to(memory_format=channels_last), or @pkg.mod:make_inputs.

exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or load error.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 2 with one line, like ours
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"fxlint: error: {message}\n")


def _codes(values: Sequence[str] | None) -> list[str] | None:
    if not values:
        return None
    return [c for v in values for c in v.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fxlint", description="Find implicit copies, layout copies, gradient breaks and "
                "advanced-index copies in PyTorch programs, on the graphs torch.compile captures.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"fxlint {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    lint = sub.add_parser("lint", help="lint a model and print the findings",
                          formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
                          description="Capture TARGET with Dynamo (or read its FX/exported graph), run the rules, "
                          "and print the findings.")
    lint.add_argument("target", nargs="?", metavar="TARGET", help="what to lint (see below)")
    lint.add_argument("-i", "--input", action="append", default=[], metavar="SPEC",
                      help="an example input; repeat for several positional inputs")
    lint.add_argument("--zoo", nargs="?", const="models", metavar="DIR",
                      help="lint every scenario model in DIR (default ./models) instead of TARGET")
    _add_report_args(lint)
    lint.set_defaults(func=cmd_lint)

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    rules.set_defaults(func=cmd_rules)

    explain = sub.add_parser("explain", help="print a rule's documentation")
    explain.add_argument("code", metavar="CODE", help="a rule code (FXL401) or name (index-as-slice)")
    explain.set_defaults(func=cmd_explain)
    return p


def _add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["text", "json", "sarif"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only these rule codes or prefixes, comma-separated (e.g. FXL4,FXL101)")
    p.add_argument("--ignore", action="append", metavar="CODES", help="skip these rule codes or prefixes")
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="warning",
                   help="exit 1 when a finding is at or above this severity (default warning)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


# --------------------------------------------------------------------------- commands


def _load_inputs(specs: list[str], factory_inputs: Any, target: str) -> Any:
    from .spec import parse_specs

    if specs:
        return parse_specs(specs)
    if factory_inputs is not None:
        return factory_inputs
    raise TargetError(f"{target} needs example inputs: pass --input SPEC (e.g. --input 'randn(2,3,224,224)')")


def _emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _exit_code(reports: list[Any], fail_on: str) -> int:
    if fail_on == "never":
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(r.at_or_above(fail_on) for r in reports) else EXIT_CLEAN


def zoo_models(folder: str) -> list[str]:
    """Scenario model files in ``folder`` that define ``make()``."""
    if not os.path.isdir(folder):
        raise TargetError(f"no model folder {folder!r} (run from the repository root, or pass --zoo DIR)")
    files = sorted(f for f in glob.glob(os.path.join(folder, "*.py")) if not os.path.basename(f).startswith("_"))
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            if "\ndef make(" in fh.read():
                out.append(f)
    return out


def cmd_lint(args: argparse.Namespace) -> int:
    import fxlint
    from .registry import select_rules
    from .renderers import render
    from .target import load_target

    select, ignore = _codes(args.select), _codes(args.ignore)
    select_rules(select, ignore)  # bad codes are a usage error before anything loads
    if args.zoo is None and not args.target:
        raise TargetError("lint needs a TARGET (or --zoo); see `fxlint lint --help`")
    if args.zoo is not None:
        return _lint_zoo(args, select, ignore)
    loaded = load_target(args.target)
    inputs = _load_inputs(args.input, loaded.inputs, args.target)
    report = fxlint.lint(loaded.obj, inputs, select=select, ignore=ignore)
    _emit(render(report, args.format), args.output)
    return _exit_code([report], args.fail_on)


def _lint_zoo(args: argparse.Namespace, select: Any, ignore: Any) -> int:
    import json

    import fxlint
    from .renderers import render
    from .renderers.json import report_dict
    from .target import load_target

    files = zoo_models(args.zoo)
    if not files:
        raise TargetError(f"no scenario models (files defining make()) in {args.zoo!r}")
    reports = []
    chunks: list[str] = []
    as_json: dict[str, Any] = {}
    for i, path in enumerate(files, 1):
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"[{i}/{len(files)}] {name}", file=sys.stderr, flush=True)
        loaded = load_target(f"{path}:make")
        report = fxlint.lint(loaded.obj, _load_inputs(args.input, loaded.inputs, path), select=select, ignore=ignore)
        reports.append(report)
        if args.format == "text":
            chunks.append(f"== {name} ==\n{render(report, 'text')}\n")
        else:
            as_json[name] = report_dict(report) if args.format == "json" else json.loads(render(report, "sarif"))
    if args.format == "text":
        total = sum(len(r) for r in reports)
        copied = sum(r.total_bytes for r in reports)
        from .tensorinfo import human_bytes

        chunks.append(f"{len(files)} models, {total} findings, {human_bytes(copied)} copied per call in all.")
        _emit("\n".join(chunks), args.output)
    else:
        _emit(json.dumps({"models": as_json}, indent=2, default=str), args.output)
    return _exit_code(reports, args.fail_on)


def cmd_rules(args: argparse.Namespace) -> int:
    import json

    from tabulate import tabulate

    from .registry import all_rules

    rules = all_rules()
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "severity": str(r.severity), "summary": r.summary}
                          for r in rules], indent=2))
    else:
        print(tabulate([[r.code, r.name, str(r.severity), r.summary] for r in rules],
                       headers=["Code", "Name", "Default", "Summary"], tablefmt="simple",
                       maxcolwidths=[None, None, None, 80]))
    return EXIT_CLEAN


def explain_text(code: str) -> str:
    from .registry import get_rule

    r = get_rule(code)
    return f"# {r.code} {r.name} (default severity: {r.severity})\n\n{r.doc}\n"


def cmd_explain(args: argparse.Namespace) -> int:
    sys.stdout.write(explain_text(args.code))
    return EXIT_CLEAN


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args))
    except FxlintError as exc:
        if debug:
            traceback.print_exc()
        print(f"fxlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fxlint: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback, unless --debug
        if debug:
            traceback.print_exc()
        msg = (str(exc).strip().splitlines() or [""])[0]
        print(f"fxlint: internal error: {type(exc).__name__}: {msg} (run with --debug for the traceback)",
              file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
