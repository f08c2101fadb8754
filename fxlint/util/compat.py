"""Third-party packages that fxlint's census and tests import, made importable on a CPU torch.

torchvision ships a compiled extension (``torchvision/_C.so``) built against one exact torch
build. Installed next to a torch it was not built for (the registry's CUDA torchvision wheel next
to the CPU ``torch==2.13.0+cpu`` this project pins), the extension does not load. torchvision has a
designed mode for that: ``torchvision.extension._has_ops()`` is False and every C op (``nms``,
``roi_align``, ``deform_conv2d``...) raises torchvision's own ``RuntimeError("Couldn't load custom
C++ ops...")`` when it is called; models, transforms and ``torchvision.ops.misc`` are plain Python
and work. Only two modules of torchvision's ``__init__`` do not honour that mode:
``torchvision._meta_registrations`` and ``torchvision._autograd_registrations`` register fake
(meta) and autograd kernels for the C ops, and the first registration raises
``RuntimeError: operator torchvision::nms does not exist``. So without help:

* ``import torchvision`` raises that error;
* ``import timm`` raises it too (timm imports ``torchvision.ops.misc``);
* transformers finds torchvision installed, imports it, and its lazy model imports fail
  (``ModuleNotFoundError: Could not import module 'BertModel'``).

What this module does, and only when torchvision's C extension did not load under this torch
(decided by torchvision itself, at the point of its own import where it has just tried to load
``_C``): it supplies empty stand-ins for those two registration modules, so ``import
torchvision`` completes in its python-only mode. There is nothing to register when the operators
do not exist. Calling a C op still raises torchvision's own error.

What a user sees:

* matching torch and torchvision (CPU + CPU, or CUDA + CUDA of the same release): the extension
  loads, the stand-ins are never used, torchvision imports exactly as it would without fxlint
  (``ensure_torchvision_importable()`` returns ``"native"``);
* a mismatched pair (the CPU torch with a CUDA torchvision wheel, as in this project's venv):
  without this module, the import errors above; with it, torchvision, timm and transformers import,
  torchvision's models build and run, and ``torchvision.ops.nms`` (and the other C ops) raise
  torchvision's "Couldn't load custom C++ ops" error when called (``"python-only"``);
* torchvision not installed: nothing happens (``"absent"``).

torchaudio has the same mismatch (the registry's wheel links ``libc10_cuda.so``) and the same designed mode:
a torchaudio whose compiled extension is not there imports with ``_IS_TORCHAUDIO_EXT_AVAILABLE = False``,
its models (wav2vec2, Conformer, Emformer, ...) are Python, and the functions that need the extension raise
torchaudio's own error. ``install_torchvision_fallback`` also wraps torchaudio's ``_extension.utils._load_lib``
so that an extension which cannot load *because a shared library it needs is missing* counts as not built
(``torchaudio_mode()`` is ``"python-only"``); any other load error propagates. Without it ``import
torchaudio`` raises, and so does transformers' audio models (they import torchaudio when it is installed).

fxlint itself never imports torchvision. The CLI installs the fallback before it loads a TARGET
(``fxlint lint model.py:make`` on a file that imports timm works with either wheel); the census in
``bench/census.py`` and the test suite's ``conftest.py`` call it too. In your own scripts, call
``fxlint.util.compat.ensure_torchvision_importable()`` before ``import timm`` / ``import torchvision``, or
once for a whole environment ``python -m fxlint.util.compat --install-pth`` (``install_pth``: a ``.pth``
file that installs the fallback at every start-up; the development venv of ``make venv`` has it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

__all__ = ["ensure_torchvision_importable", "install_pth", "install_torchvision_fallback", "torchaudio_mode",
           "torchvision_mode"]

#: torchvision's modules that register kernels for its C operators at import time
_REGISTRATION_MODULES = ("torchvision._meta_registrations", "torchvision._autograd_registrations")


class _StandInLoader(importlib.abc.Loader):
    """Creates an empty module in place of a registration module with nothing to register."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = types.ModuleType(spec.name)
        mod.__doc__ = (f"fxlint.util.compat stand-in for {spec.name}: torchvision's C extension did not load under "
                       "this torch, so there are no C operators to register kernels for.")
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _TorchvisionFallbackFinder(importlib.abc.MetaPathFinder):
    """Answers the imports of torchvision's registration modules with stand-ins, but only when
    ``torchvision.extension`` (imported first by torchvision's ``__init__``) reports no C ops;
    every other import, and every import when the ops loaded, goes to the normal finders."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _REGISTRATION_MODULES:
            return None
        ext = sys.modules.get("torchvision.extension")
        has_ops = getattr(ext, "_has_ops", None)
        if has_ops is None or has_ops():
            return None  # the extension loaded (or torchvision changed its layout): import as usual
        return importlib.util.spec_from_loader(fullname, _StandInLoader())


_FINDER = _TorchvisionFallbackFinder()

#: torchaudio's module whose ``_load_lib`` loads its compiled extension at import time
_TORCHAUDIO_UTILS = "torchaudio._extension.utils"


def _cannot_load_dependency(exc: BaseException) -> bool:
    """An ``OSError`` of ``torch.ops.load_library`` because the library needs another shared library this
    machine does not have (``libc10_cuda.so``: a CUDA build next to a CPU torch)."""
    text = f"{exc} {exc.__cause__ or ''}"
    return isinstance(exc, OSError) and "cannot open shared object file" in text


class _TorchaudioLoader(importlib.abc.Loader):
    """Runs torchaudio's own ``_extension.utils`` and wraps its ``_load_lib``: a compiled extension that
    cannot load because a dependency is missing counts as "not built", torchaudio's designed mode
    (``_IS_TORCHAUDIO_EXT_AVAILABLE`` is False; the functions that need it raise torchaudio's own error)."""

    def __init__(self, real: importlib.machinery.ModuleSpec) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        assert self.real.loader is not None
        return self.real.loader.create_module(self.real)

    def exec_module(self, module: types.ModuleType) -> None:
        assert self.real.loader is not None
        self.real.loader.exec_module(module)
        load = getattr(module, "_load_lib", None)
        if load is None:
            return  # torchaudio changed its layout: leave it as it is

        def _load_lib(lib: str) -> bool:
            try:
                return bool(load(lib))
            except OSError as exc:
                if _cannot_load_dependency(exc):
                    module._fxlint_load_error = str(exc)  # type: ignore[attr-defined]
                    return False
                raise

        module._load_lib = _load_lib  # type: ignore[attr-defined]


class _TorchaudioFallbackFinder(importlib.abc.MetaPathFinder):
    """Answers the import of ``torchaudio._extension.utils`` with the real module behind the loader above."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TORCHAUDIO_UTILS:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or real.loader is None:
            return None
        spec = importlib.util.spec_from_file_location(fullname, real.origin, loader=_TorchaudioLoader(real))
        return spec


_AUDIO_FINDER = _TorchaudioFallbackFinder()


def install_torchvision_fallback() -> None:
    """Put the fallback in place for later imports of torchvision (idempotent, imports nothing).

    Cheap enough for a test suite's start-up: torchvision is imported only when something asks
    for it, and the stand-ins are used only if its C extension then fails to load."""
    # one is enough: the .pth of ``install_pth`` loads this file on its own (another module object, another
    # finder of the same class), and a venv's site-packages can be read twice (lib and its lib64 link)
    if not any(type(f).__name__ == _TorchvisionFallbackFinder.__name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)
    if not any(type(f).__name__ == _TorchaudioFallbackFinder.__name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _AUDIO_FINDER)


def torchvision_mode() -> str:
    """``"native"``, ``"python-only"`` or ``"absent"`` for a torchvision that is already imported
    (``"absent"`` also when it is installed but not imported yet)."""
    tv = sys.modules.get("torchvision")
    if tv is None:
        return "absent"
    ext = sys.modules.get("torchvision.extension")
    return "native" if ext is not None and ext._has_ops() else "python-only"


def torchaudio_mode() -> str:
    """``"native"``, ``"python-only"`` (its compiled extension could not load: a CUDA build next to a CPU
    torch) or ``"absent"`` (not imported) for torchaudio."""
    if "torchaudio" not in sys.modules:
        return "absent"
    utils = sys.modules.get(_TORCHAUDIO_UTILS)
    return "python-only" if getattr(utils, "_fxlint_load_error", None) else "native"


def ensure_torchvision_importable() -> str:
    """Make ``import torchvision`` (and so timm and transformers) work under this torch, import it,
    and say how it runs: ``"native"`` (its C extension loaded; nothing was changed),
    ``"python-only"`` (the extension did not load; the stand-ins let the import complete and
    torchvision's C ops raise its own error when called) or ``"absent"`` (not installed).

    Any other import error of torchvision propagates unchanged.
    """
    if "torchvision" not in sys.modules and importlib.util.find_spec("torchvision") is None:
        return "absent"
    install_torchvision_fallback()
    import torchvision  # noqa: F401

    return torchvision_mode()


#: the file ``install_pth`` writes into a venv's site-packages
PTH_NAME = "fxlint-torchvision-fallback.pth"
#: its one line, run at every interpreter start-up of that venv (``site`` executes a .pth line that starts with
#: ``import``): it loads this file alone, not the ``fxlint`` package (that would cost every start-up the
#: package's imports, and pytest could no longer rewrite the asserts of fxlint's plugin), and installs the
#: fallback; it does nothing when fxlint is not installed there any more
PTH_LINE = (
    "import importlib.util as _u, os as _o; "
    "_s = _u.find_spec('fxlint'); "
    "_f = _s and _s.submodule_search_locations and "
    "_o.path.join(list(_s.submodule_search_locations)[0], 'util', 'compat.py'); "
    "_c = _f and _o.path.isfile(_f) and _u.spec_from_file_location('_fxlint_torchvision_fallback', _f); "
    "_m = _c and _u.module_from_spec(_c); "
    "_m and (_c.loader.exec_module(_m) or _m.install_torchvision_fallback())\n"
)


def install_pth(site_dir: str | None = None) -> str:
    """Make every Python of this environment import torchvision (and so timm and transformers) the way
    ``ensure_torchvision_importable`` does, without a call in each script: write a ``.pth`` file into
    ``site_dir`` (default: this interpreter's site-packages) that installs the fallback at start-up
    (``install_torchvision_fallback``: it imports nothing, and acts only when torchvision's C extension
    fails to load under this torch). ``make venv`` does this for the development venv, whose
    torchvision is the registry's CUDA build next to the CPU torch. Returns the file's path."""
    import os
    import sysconfig

    folder = site_dir or sysconfig.get_paths()["purelib"]
    path = os.path.join(folder, PTH_NAME)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(PTH_LINE)
    return path


if __name__ == "__main__":  # python -m fxlint.util.compat --install-pth
    if sys.argv[1:] != ["--install-pth"]:
        sys.exit("usage: python -m fxlint.util.compat --install-pth")
    print(f"fxlint.util.compat: wrote {install_pth()}")
