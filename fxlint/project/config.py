"""Project configuration: the ``[tool.fxlint]`` table of the user's ``pyproject.toml``.

Every entry point resolves its settings here, so they all behave the same:

* the CLI (``fxlint lint``) starts the search at the TARGET's file (or module file);
* ``fxlint.lint`` at the file that defines the model's class or the callable
  (a GraphModule or ExportedProgram has no user class: the working directory);
* the compile backend at the user's source file of the graph's nodes, else the
  working directory;
* the rewrite engine calls :func:`resolve` the same way (``start`` = the model's
  file, explicit arguments as keywords) and passes the ``Settings`` to
  ``engine.run_rules``.

The search walks up from ``start`` to the filesystem root and takes the
closest ``pyproject.toml`` that has a ``[tool.fxlint]`` table (a
``pyproject.toml`` without one is skipped, as ruff does). ``config=PATH``
names a file instead (a ``pyproject.toml`` with ``[tool.fxlint]``, or any other
TOML file whose top level is the fxlint table); ``config=False`` ignores
configuration files.

Keys::

    [tool.fxlint]
    select = ["FXL1", "FXL401"]      # codes or prefixes; default: every rule
    extend-select = ["FXL5"]         # added to select (the file's or an explicit one)
    ignore = ["FXL108"]              # more specific entry wins: select FXL401 beats ignore FXL4
    per-file-ignores = { "legacy/*.py" = ["FXL4"] }  # globs relative to this file's folder
    severity = { FXL401 = "error", FXL1 = "info" }   # per code or prefix; most specific wins
    fail-on = "warning"              # CLI exit 1 at or above: error, warning, info, never
    inner = "inductor"               # the compile backend's default inner backend
    rewrite = false                  # apply safe rewrites by default (backend, fxlint.rewrite)
    probe = true                     # fxlint lint / fxlint.lint: measure CPU-dependent kernel copies
                                     # by running the op once (fxlint.kernels.probe); the compile
                                     # backend probes only with options={"probe": True}
    probe-max-mib = 256              # skip probing an op estimated to allocate more than this
    device = "cuda"                  # fxlint lint / fxlint.lint: lint as if inputs, parameters and
                                     # buffers lived on this device (simulated; docs/device.md)
    passthrough = ["einops", "mylib.ops"]  # helper packages reported through: a copy made inside
                                     # them is the calling line's (default ["einops"])

An explicit argument (CLI flag, ``fxlint.lint(select=...)``, backend option)
replaces the value of the same key from the file; keys not passed still come
from the file. Unknown keys, unknown rule codes and bad values raise
``fxlint.ConfigError`` naming the key and the file.

Severity overrides and per-file ignores are applied by ``engine.run_rules``
when it is given the ``Settings``: one place, every entry point.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import ConfigError, closest
from ..findings import Severity

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import Registry, Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: tomli if installed, else config files are not read
    try:
        import tomli as tomllib
    except ImportError:
        # None: no TOML reader (a type error only where tomli is installed)
        tomllib = None  # type: ignore[assignment, unused-ignore]

KEYS = ("select", "extend-select", "ignore", "per-file-ignores", "severity", "fail-on", "inner", "rewrite", "probe",
        "probe-max-mib", "device", "passthrough")
FAIL_ON = ("error", "warning", "info", "never")
DEFAULT_FAIL_ON = "warning"
#: the default of ``probe-max-mib`` (``fxlint.kernels.probe.DEFAULT_MAX_MIB``; kept here so reading
#: a config file does not import torch)
DEFAULT_PROBE_MAX_MIB = 256.0

#: What ``config=`` accepts: a path, ``False`` (no file), ``None`` (search), or resolved ``Settings``.
ConfigArg: TypeAlias = "str | os.PathLike[str] | bool | Settings | None"
Codes: TypeAlias = str | Sequence[str] | None


@dataclass(frozen=True)
class FileConfig:
    """The validated ``[tool.fxlint]`` table of one file (keys absent from the file are None)."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    severity: tuple[tuple[str, Severity], ...] | None = None
    fail_on: str | None = None
    inner: str | None = None
    rewrite: bool | None = None
    probe: bool | None = None
    probe_max_mib: float | None = None
    device: str | None = None
    passthrough: tuple[str, ...] | None = None

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()


@dataclass(frozen=True)
class Settings:
    """The effective settings for one run: what the file says, overridden by explicit arguments."""

    rules: tuple[Rule, ...]
    severity: tuple[tuple[str, Severity], ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fail_on: str = DEFAULT_FAIL_ON
    inner: str | None = None
    rewrite: bool = False
    config_file: Path | None = None
    root: Path = field(default_factory=Path.cwd)  # per-file-ignores globs are relative to it
    probe: bool = True  # fxlint.lint / fxlint lint resolve CPU-dependent kernel copies on this machine
    probe_max_mib: float = DEFAULT_PROBE_MAX_MIB
    device: str | None = None  # the target device of the analysis (None: the inputs' own device)
    #: packages whose frames findings and the audit report through (``fxlint.util.source.DEFAULT_PASSTHROUGH``)
    passthrough: tuple[str, ...] = ("einops",)
    # the registry ``rules`` were chosen from: the engine asks it which other rules own a copy
    registry: Registry | None = field(default=None, compare=False, repr=False)

    @property
    def codes(self) -> list[str]:
        return [r.code for r in self.rules]

    def severity_for(self, code: str, default: Severity) -> Severity:
        """The configured severity of ``code`` (the most specific code or prefix), else ``default``."""
        best: tuple[int, Severity] | None = None
        for prefix, sev in self.severity:
            n = 0 if prefix == "ALL" else len(prefix)
            if (n == 0 or code.startswith(prefix)) and (best is None or n > best[0]):
                best = (n, sev)
        return best[1] if best else default

    def ignored_in_file(self, code: str, file: str | None) -> bool:
        """True when ``per-file-ignores`` silences ``code`` in ``file``."""
        if not self.per_file_ignores or not file:
            return False
        rel, base = _relative(file, self.root), os.path.basename(file)
        for pattern, codes in self.per_file_ignores:
            if not any(c == "ALL" or code.startswith(c) for c in codes):
                continue
            if (rel is not None and fnmatch.fnmatchcase(rel, pattern)) or (
                "/" not in pattern and fnmatch.fnmatchcase(base, pattern)
            ) or fnmatch.fnmatchcase(Path(file).as_posix(), pattern):
                return True
        return False

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly view (``fxlint config``)."""
        return {
            "config_file": str(self.config_file) if self.config_file else None,
            "rules": self.codes,
            "severity": {k: v.value for k, v in self.severity},
            "per-file-ignores": {k: list(v) for k, v in self.per_file_ignores},
            "fail-on": self.fail_on,
            "inner": self.inner,
            "rewrite": self.rewrite,
            "probe": self.probe,
            "probe-max-mib": self.probe_max_mib,
            "device": self.device,
        }


def _relative(file: str, root: Path) -> str | None:
    try:
        rel = os.path.relpath(os.path.abspath(file), root)
    except ValueError:  # another drive (Windows)
        return None
    return None if rel.startswith("..") else Path(rel).as_posix()


# --------------------------------------------------------------------------- finding and reading files


def _toml(path: Path) -> dict[str, Any]:
    if tomllib is None:  # pragma: no cover
        raise ConfigError(f"reading {path} needs Python 3.11+ (tomllib); pass the options explicitly")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc


def _fxlint_table(path: Path, data: dict[str, Any], *, required: bool) -> dict[str, Any] | None:
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("fxlint") if isinstance(data.get("tool"), dict) else None
        if table is None:
            if required:
                raise ConfigError(f"{path} has no [tool.fxlint] table")
            return None
        if not isinstance(table, dict):
            raise ConfigError(f"[tool.fxlint] in {path} must be a table")
        return table
    return data  # a dedicated fxlint TOML file: the table is the whole file


def find_config_file(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The closest ``pyproject.toml`` with a ``[tool.fxlint]`` table, walking up from ``start``
    (a file or a folder; default the working directory)."""
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        return None
    here = Path(start) if start is not None else Path.cwd()
    here = here.resolve() if here.exists() else Path(os.path.abspath(here))
    folder = here if here.is_dir() else here.parent
    for d in (folder, *folder.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file() and _fxlint_table(candidate, _cached_toml(candidate), required=False) is not None:
            return candidate
    return None


def _cached_toml(path: Path) -> dict[str, Any]:
    st = path.stat()
    return _toml_at(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _toml_at(path: str, mtime_ns: int, size: int) -> dict[str, Any]:  # noqa: ARG001 - cache key
    return _toml(Path(path))


def load_file(path: str | os.PathLike[str]) -> FileConfig:
    """Read and validate the fxlint table of ``path``."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no such config file: {path}")
    p = p.resolve()
    table = _fxlint_table(p, _cached_toml(p), required=True)
    assert table is not None
    return _validate(table, p)


def _where(key: str, path: Path) -> str:
    table = "[tool.fxlint]" if path.name == "pyproject.toml" else "fxlint config"
    return f"{table} key {key!r} in {path}"


def _codes(value: Any, key: str, path: Path) -> tuple[str, ...]:
    from ..registry import normalise_codes

    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{_where(key, path)} must be a list of rule codes, e.g. [\"FXL401\"], not {value!r}")
    try:
        return tuple(normalise_codes(value, key) or ())
    except ConfigError as exc:
        msg = str(exc).removeprefix(f"{key}: ")
        raise ConfigError(f"{_where(key, path)}: {msg}") from None


def _validate(table: dict[str, Any], path: Path) -> FileConfig:
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        key = unknown[0]
        close = closest(key.replace("_", "-"), KEYS)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise ConfigError(f"unknown key {key!r} in {path}{hint}; fxlint knows {', '.join(KEYS)}")
    out: dict[str, Any] = {"path": path}
    for key in ("select", "extend-select", "ignore"):
        if key in table:
            out[key.replace("-", "_")] = _codes(table[key], key, path)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{_where('per-file-ignores', path)} must be a table of glob = [codes]")
        out["per_file_ignores"] = tuple(
            (str(glob), _codes(codes, f"per-file-ignores.{glob!r}", path)) for glob, codes in pfi.items()
        )
    if "severity" in table:
        sev = table["severity"]
        if not isinstance(sev, dict):
            raise ConfigError(f"{_where('severity', path)} must be a table of code = \"error\"|\"warning\"|\"info\"")
        pairs = []
        for code, level in sev.items():
            (norm,) = _codes([code], f"severity.{code}", path) or (code,)
            try:
                pairs.append((norm, Severity.parse(level)))
            except ConfigError as exc:
                raise ConfigError(f"{_where(f'severity.{code}', path)}: {exc}") from None
        out["severity"] = tuple(pairs)
    if "fail-on" in table:
        out["fail_on"] = _fail_on(table["fail-on"], _where("fail-on", path))
    if "inner" in table:
        if not isinstance(table["inner"], str) or not table["inner"]:
            raise ConfigError(f"{_where('inner', path)} must be a backend name such as \"inductor\" or \"eager\"")
        if table["inner"] == "fxlint":
            raise ConfigError(f"{_where('inner', path)} cannot be 'fxlint' itself")
        out["inner"] = table["inner"]
    if "rewrite" in table:
        if not isinstance(table["rewrite"], bool):
            raise ConfigError(f"{_where('rewrite', path)} must be true or false, not {table['rewrite']!r}")
        out["rewrite"] = table["rewrite"]
    if "probe" in table:
        if not isinstance(table["probe"], bool):
            raise ConfigError(f"{_where('probe', path)} must be true or false, not {table['probe']!r}")
        out["probe"] = table["probe"]
    if "probe-max-mib" in table:
        out["probe_max_mib"] = _probe_max_mib(table["probe-max-mib"], _where("probe-max-mib", path))
    if "device" in table:
        out["device"] = _device(table["device"], _where("device", path))
    if "passthrough" in table:
        out["passthrough"] = _packages(table["passthrough"], _where("passthrough", path))
    return FileConfig(**out)


def _packages(value: Any, where: str) -> tuple[str, ...]:
    import re

    if not isinstance(value, list) or not all(
            isinstance(v, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", v) for v in value):
        raise ConfigError(f"{where} must be a list of package names, e.g. [\"einops\"], not {value!r}")
    return tuple(value)


def _device(value: Any, where: str) -> str:
    """A target device ("cuda", "cuda:1"); checked without importing torch (config files are read
    before torch loads), the full check is ``fxlint.analysis.device.parse_device``."""
    import re

    if not isinstance(value, str) or not re.fullmatch(r"(cuda|xpu|mps|hpu|cpu)(:\d+)?", value.strip()):
        raise ConfigError(f"{where} must be a device such as \"cuda\" or \"cuda:0\" "
                          f"(cuda, xpu, mps, hpu, cpu), not {value!r}")
    return value.strip()


def _probe_max_mib(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise ConfigError(f"{where} must be a positive number of MiB (e.g. 256), not {value!r}")
    return float(value)


def _fail_on(value: Any, where: str) -> str:
    v = str(value).lower() if isinstance(value, str) else value
    if v not in FAIL_ON:
        raise ConfigError(f"{where} must be one of {', '.join(FAIL_ON)}, not {value!r}")
    return v


# --------------------------------------------------------------------------- resolving


def file_config(start: str | os.PathLike[str] | None = None, config: ConfigArg = None) -> FileConfig:
    """The configuration file that applies at ``start`` (see module docstring); empty when none."""
    if config is False:
        return FileConfig()
    if config is None or config is True:
        found = find_config_file(start)
        return load_file(found) if found is not None else FileConfig()
    if isinstance(config, Settings):
        raise TypeError("file_config() takes a path, False or None, not resolved Settings")
    return load_file(config)


def resolve(
    start: str | os.PathLike[str] | None = None,
    *,
    config: ConfigArg = None,
    select: Codes = None,
    ignore: Codes = None,
    extend_select: Codes = None,
    severity: Mapping[str, Severity | str] | None = None,
    per_file_ignores: Mapping[str, Codes] | None = None,
    fail_on: str | None = None,
    inner: str | None = None,
    rewrite: bool | None = None,
    probe: bool | None = None,
    probe_max_mib: float | None = None,
    device: str | None = None,
    registry: Registry | None = None,
) -> Settings:
    """Effective settings at ``start``: the applicable config file, overridden key by key by
    the explicit arguments that are not None.

    ``start`` is the user's file the run is about (a model's source file); ``config`` is
    None (search from ``start``), a path (use that file), ``False`` (no file) or ``Settings``
    (returned as they are). This is the one function every entry point calls. ``registry``
    holds the rules to choose from (default: every rule fxlint ships).
    """
    from ..registry import default_registry

    if isinstance(config, Settings):
        return config
    reg = registry or default_registry()
    fc = file_config(start, config)

    def explicit(codes: Codes, what: str) -> tuple[str, ...] | None:
        norm = reg.normalise_codes(codes, what)  # raises ConfigError naming the bad code
        return tuple(norm) if norm is not None else None

    sel = explicit(select, "select") if select is not None else fc.select
    ext = explicit(extend_select, "extend-select") if extend_select is not None else fc.extend_select
    ign = explicit(ignore, "ignore") if ignore is not None else fc.ignore
    if ext:
        # extend-select adds to the selection and, being more specific, can win over an ignored prefix
        sel = (*(sel if sel is not None else ("ALL",)), *ext)
    rules = tuple(reg.select(list(sel) if sel is not None else None, list(ign or ())))

    sev = dict(fc.severity or ())
    for code, level in (severity or {}).items():
        (norm,) = explicit([code], "severity") or (code,)
        sev[norm] = Severity.parse(level)
    pfi = dict(fc.per_file_ignores or ())
    for glob, codes in (per_file_ignores or {}).items():
        pfi[str(glob)] = explicit(codes, f"per-file-ignores {glob!r}") or ()
    if rewrite is not None and not isinstance(rewrite, bool):
        raise ConfigError(f"rewrite must be True or False, not {rewrite!r}")
    if probe is not None and not isinstance(probe, bool):
        raise ConfigError(f"probe must be True or False, not {probe!r}")
    return Settings(
        rules=rules,
        registry=registry,
        severity=tuple(sev.items()),
        per_file_ignores=tuple(pfi.items()),
        fail_on=_fail_on(fail_on, "fail_on") if fail_on is not None else (fc.fail_on or DEFAULT_FAIL_ON),
        inner=inner if inner is not None else fc.inner,
        rewrite=rewrite if rewrite is not None else bool(fc.rewrite),
        config_file=fc.path,
        root=fc.root,
        probe=probe if probe is not None else (fc.probe if fc.probe is not None else True),
        probe_max_mib=_probe_max_mib(probe_max_mib, "probe_max_mib") if probe_max_mib is not None
        else (fc.probe_max_mib or DEFAULT_PROBE_MAX_MIB),
        device=_device(str(device) if not isinstance(device, str) else device, "device") if device is not None
        else fc.device,
        passthrough=fc.passthrough if fc.passthrough is not None else ("einops",),
    )


def source_file_of(target: Any) -> str | None:
    """The user's file that defines ``target``'s class (an ``nn.Module``) or ``target`` itself
    (a function); None for GraphModules, ExportedPrograms and classes defined inside torch."""
    import inspect

    from ..util.source import is_internal_file

    try:
        import torch

        target = getattr(target, "_orig_mod", target)  # a torch.compile'd module: the user's module
        if isinstance(target, (torch.fx.GraphModule, torch.export.ExportedProgram)):
            return None
        obj = type(target) if isinstance(target, torch.nn.Module) else inspect.unwrap(target)
        if hasattr(obj, "__func__"):  # bound method
            obj = obj.__func__
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            obj = type(obj)  # a callable object: its class defines __call__
        path = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        return None
    if path is None or is_internal_file(path):
        return None
    return path
