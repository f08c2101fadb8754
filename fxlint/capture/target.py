"""Load a CLI TARGET: ``path/to/file.py:Name`` or ``package.module:Name``.

``Name`` (a dotted attribute path is allowed) may be

* an ``nn.Module`` class, instantiated without arguments;
* a factory function taking no arguments that returns a module, or a
  ``(module, inputs)`` pair;
* an ``nn.Module`` instance, a ``GraphModule`` or an ``ExportedProgram``;
* a plain function with required parameters: the callable to lint itself.

A factory (or class) that wraps its model in ``DistributedDataParallel`` or
``fully_shard`` needs a process group: it runs with the ``env://`` variables of
a one-process job set where they are not (so ``dist.init_process_group()``
works), and if it fails for want of a process group, it runs once more after
fxlint starts a one-rank gloo group (see ``fxlint.capture.distributed``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import TargetError, closest


@dataclass
class LoadedTarget:
    obj: Any  # what to lint
    inputs: Any = None  # inputs the factory returned, if any
    description: str = ""


def _split(target: str) -> tuple[str, str]:
    if ":" not in target:
        raise TargetError(
            f"TARGET {target!r} must be 'path/to/file.py:Name' or 'package.module:Name'"
        )
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise TargetError(f"TARGET {target!r} must be 'path/to/file.py:Name' or 'package.module:Name'")
    return where, name


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise TargetError(f"no such file: {path}")
    abspath = os.path.abspath(path)
    mod_name = "_fxlint_target_" + os.path.splitext(os.path.basename(abspath))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(mod_name, abspath)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(abspath)
    sys.path.insert(0, folder)  # sibling imports, as `python file.py` would allow
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(mod_name, None)
        raise TargetError(f"cannot import {path}: SyntaxError at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        raise TargetError(f"importing {path} raised {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    return module


def _import_module(name: str) -> Any:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `python -m` semantics
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise TargetError(f"no module named {exc.name!r} (from TARGET module {name!r})") from exc
        raise TargetError(f"importing {name} raised ModuleNotFoundError: {exc}") from exc
    except Exception as exc:
        raise TargetError(f"importing {name} raised {type(exc).__name__}: {exc}") from exc


def load_object(target: str) -> Any:
    """The Python object a ``where:Name`` reference names."""
    from ..util.compat import install_torchvision_fallback

    # a model file that imports timm or torchvision must load even where torchvision's C
    # extension cannot (a CUDA torchvision wheel beside the CPU torch): see fxlint.util.compat
    install_torchvision_fallback()
    where, name = _split(target)
    module = _import_file(where) if where.endswith(".py") or os.sep in where or "/" in where else _import_module(where)
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            close = closest(part, [n for n in dir(obj) if not n.startswith("_")])
            hint = f"; did you mean {where}:{name.rsplit('.', 1)[0] + '.' if '.' in name else ''}{close}?" \
                if close else ""
            raise TargetError(f"{where} has no attribute {name!r}{hint}")
        obj = getattr(obj, part)
    return obj


def _required_params(fn: Any) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


def _call(factory: Any) -> Any:
    """``factory()``, in a one-process job's environment when it needs a process group."""
    from .distributed import needs_process_group, single_process_env, start_one_process_group

    with single_process_env():
        try:
            return factory()
        except Exception as exc:
            if not needs_process_group(exc):
                raise
        start_one_process_group()
        return factory()


def load_target(target: str) -> LoadedTarget:
    """Resolve TARGET to something ``fxlint.lint`` accepts (see module docstring)."""
    obj = load_object(target)
    if isinstance(obj, (torch.nn.Module, torch.export.ExportedProgram)):
        return LoadedTarget(obj, None, target)
    if inspect.isclass(obj):
        if not issubclass(obj, torch.nn.Module):
            raise TargetError(f"{target} is a class but not an nn.Module")
        needed = _required_params(obj.__init__)[1:]  # drop self
        if needed:
            raise TargetError(
                f"{target} needs constructor arguments ({', '.join(needed)}); "
                "point TARGET at a factory function that builds it"
            )
        try:
            return LoadedTarget(_call(obj), None, target)
        except Exception as exc:
            raise TargetError(f"{target}() raised {type(exc).__name__}: {exc}") from exc
    if callable(obj):
        if _required_params(obj):
            return LoadedTarget(obj, None, target)  # a function to lint directly
        try:
            made = _call(obj)
        except Exception as exc:
            raise TargetError(f"factory {target}() raised {type(exc).__name__}: {exc}") from exc
        if isinstance(made, tuple) and len(made) == 2 and callable(made[0]):
            return LoadedTarget(made[0], made[1], target)
        if callable(made) or isinstance(made, torch.export.ExportedProgram):
            return LoadedTarget(made, None, target)
        raise TargetError(
            f"factory {target}() returned {type(made).__name__}; expected a module or (module, inputs)"
        )
    raise TargetError(f"{target} is a {type(obj).__name__}, not a module, class or factory")
