"""Helpers shared by CLI subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ...errors import TargetError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

TARGET_HELP = """\
TARGET is path/to/file.py:Name or package.module:Name, where Name is an
nn.Module class (built without arguments), a factory returning a module or
(module, inputs), a module instance, GraphModule or ExportedProgram, or a
plain function to lint.

SPEC builds one input without eval: randn(2,3,224,224), randint(0,1000,(2,64)),
zeros(4,8,dtype=float16), randn(2,224,224,3).permute(0,3,1,2),
randn(8,3,32,32).to(memory_format=channels_last), or @pkg.mod:make_inputs.

exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or load error.
"""


def split_codes(values: Sequence[str] | None) -> list[str] | None:
    """``--select FXL4,FXL101 --select FXL2`` -> ["FXL4", "FXL101", "FXL2"]."""
    if not values:
        return None
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def add_target_args(p: argparse.ArgumentParser, *, zoo: bool = False) -> None:
    p.add_argument("target", nargs="?", metavar="TARGET", help="what to analyse (see below)")
    p.add_argument("-i", "--input", action="append", default=[], metavar="SPEC",
                   help="an example input; repeat for several positional inputs")
    if zoo:
        p.add_argument("--zoo", nargs="?", const="models", metavar="DIR",
                       help="every scenario model in DIR (default ./models) instead of TARGET")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def add_rule_filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only these rule codes or prefixes, comma-separated (e.g. FXL4,FXL101); "
                        "replaces select from the config file")
    p.add_argument("--ignore", action="append", metavar="CODES",
                   help="skip these rule codes or prefixes; replaces ignore from the config file")
    p.add_argument("--extend-select", action="append", metavar="CODES",
                   help="add these rule codes or prefixes to the selection")


def add_config_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--config", metavar="FILE",
                   help="read settings from FILE (a pyproject.toml with [tool.fxlint], or a TOML file holding "
                        "the fxlint keys) instead of the closest pyproject.toml above the target")
    g.add_argument("--no-config", action="store_true", help="ignore configuration files")


def config_arg(args: argparse.Namespace) -> str | bool | None:
    """What ``config.resolve(config=...)`` takes for these CLI flags."""
    if getattr(args, "no_config", False):
        return False
    return getattr(args, "config", None)


def check_explicit_codes(args: argparse.Namespace) -> tuple[list[str] | None, list[str] | None, list[str] | None]:
    """--select/--ignore/--extend-select, validated before anything loads (bad codes: exit 2)."""
    from ...registry import normalise_codes

    select, ignore = split_codes(args.select), split_codes(args.ignore)
    extend = split_codes(getattr(args, "extend_select", None))
    normalise_codes(select, "select")
    normalise_codes(ignore, "ignore")
    normalise_codes(extend, "extend-select")
    return select, ignore, extend


def target_file(target: str) -> str | None:
    """The source file of a loaded TARGET (``file.py:Name`` or ``pkg.mod:Name``), where the
    configuration search starts."""
    import os

    where = target.rpartition(":")[0]
    if where.endswith(".py") or os.sep in where or "/" in where:
        return os.path.abspath(where)
    mod = sys.modules.get(where)
    return getattr(mod, "__file__", None) if mod is not None else None


def load_inputs(specs: list[str], factory_inputs: Any, target: str) -> Any:
    from ...capture.spec import parse_specs

    if specs:
        return parse_specs(specs)
    if factory_inputs is not None:
        return factory_inputs
    raise TargetError(f"{target} needs example inputs: pass --input SPEC (e.g. --input 'randn(2,3,224,224)')")


def emit(text: str, output: str | None) -> None:
    from ...util.outputs import write_text

    if not text.endswith("\n"):
        text += "\n"
    if output:
        write_text(output, text)
    else:
        sys.stdout.write(text)


def add_device_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", metavar="DEVICE", type=_device_arg, default=None,
                   help="lint as if the inputs, parameters and buffers lived on DEVICE (e.g. cuda), on a machine "
                        "without one: a fake-tensor simulation, see docs/device.md (config key: device)")


def _device_arg(value: str) -> str:
    from ...errors import ConfigError
    from ...project.config import _device

    try:
        return _device(value, "--device")
    except ConfigError as exc:  # argparse turns it into a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc)) from None


def declared_device(path: str) -> str | None:
    """The target device a zoo model file declares with a module-level ``DEVICE = "cuda"`` (read
    from the source, before the file is imported), or None."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DEVICE" for t in node.targets) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def zoo_models(folder: str) -> list[str]:
    """Scenario model files in ``folder`` that define ``make()``."""
    import glob
    import os

    if not os.path.isdir(folder):
        raise TargetError(f"no model folder {folder!r} (run from the repository root, or pass --zoo DIR)")
    files = sorted(f for f in glob.glob(os.path.join(folder, "*.py")) if not os.path.basename(f).startswith("_"))
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            if "\ndef make(" in fh.read():
                out.append(f)
    if not out:
        raise TargetError(f"no scenario models (files defining make()) in {folder!r}")
    return out


def progress(i: int, n: int, what: str) -> None:
    print(f"[{i}/{n}] {what}", file=sys.stderr, flush=True)
