"""fxlint.util.compat: torchvision (and timm, transformers) importable under a torch its C extension was
not built for, and nothing changed when the extension loads.

Every check runs in a fresh interpreter: an import, once done, cannot be undone in this process.
The installed torchvision decides what is expected (``torchvision.extension._has_ops()``): on this
project's venv (CPU torch, CUDA torchvision wheel) the python-only mode, on a matching pair the
native one. Both branches are also exercised on every machine with small stand-in packages that
play a torchvision whose extension loads or fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, *, pythonpath: Path | None = None, timeout: int = 240) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: first line of a script that must see torchvision without the fallback: a venv made by `make venv`
#: installs it at every start-up (fxlint.util.compat.install_pth); this takes it out again
_NO_PTH = 'sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_TorchvisionFallbackFinder"]'


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


needs_torchvision = pytest.mark.skipif(not _installed("torchvision"), reason="torchvision is not installed")


@needs_torchvision
def test_real_torchvision_timm_transformers_import_and_run():
    out = _run("""
        import json, sys
        from fxlint.util.compat import ensure_torchvision_importable
        mode = ensure_torchvision_importable()
        import torch, torchvision, torchvision.extension
        has_ops = torchvision.extension._has_ops()
        res = {"mode": mode, "has_ops": has_ops,
               "stand_ins": [sys.modules[n].__doc__ or "" for n in
                             ("torchvision._meta_registrations", "torchvision._autograd_registrations")],
               "files": [getattr(sys.modules[n], "__file__", None) for n in
                         ("torchvision._meta_registrations", "torchvision._autograd_registrations")]}
        torch.manual_seed(0)
        m = torchvision.models.resnet18(num_classes=5).eval()
        with torch.no_grad():
            res["resnet"] = list(m(torch.randn(2, 3, 32, 32)).shape)
        try:
            torchvision.ops.nms(torch.rand(4, 4) * 10, torch.rand(4), 0.5)
            res["nms"] = "ran"
        except RuntimeError as exc:
            res["nms"] = str(exc)
        try:
            import timm
            with torch.no_grad():
                res["timm"] = list(timm.create_model("resnet10t", num_classes=3).eval()(torch.randn(1, 3, 32, 32)).shape)
        except ImportError:
            res["timm"] = "absent"
        try:
            import transformers
            cfg = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=32)
            res["bert"] = type(transformers.BertModel(cfg)).__name__
        except ImportError:
            res["bert"] = "absent"
        print(json.dumps(res))
    """)
    assert out["resnet"] == [2, 5]
    assert out["timm"] in ([1, 3], "absent")
    assert out["bert"] in ("BertModel", "absent")
    if out["has_ops"]:
        # a matching torch/torchvision pair: the real registration modules, nms runs
        assert out["mode"] == "native"
        assert all(f and f.endswith(".py") for f in out["files"])
        assert out["nms"] == "ran"
    else:
        assert out["mode"] == "python-only"
        assert all("fxlint.util.compat stand-in" in d for d in out["stand_ins"])
        assert out["nms"].startswith("Couldn't load custom C++ ops"), out["nms"]


@needs_torchvision
def test_without_the_fallback_a_mismatched_torchvision_does_not_import():
    """What the fallback is for: the failure a user with the mismatched pair sees without it."""
    out = _run("""
        import json
        import sys
        """ + _NO_PTH + """
        import torch
        try:
            import torchvision
            res = {"error": None, "has_ops": torchvision.extension._has_ops()}
        except RuntimeError as exc:
            res = {"error": str(exc), "has_ops": False}
        print(json.dumps(res))
    """)
    if out["has_ops"]:
        assert out["error"] is None  # matching pair: nothing to fix
    else:
        assert out["error"] is not None and "torchvision::" in out["error"] and "does not exist" in out["error"]


# ---------------------------------------------------------------- both branches, on any machine

_FAKE_INIT = """
from . import extension
from . import _autograd_registrations, _meta_registrations
"""
_FAKE_REGISTRATIONS = """
import torchvision.extension
if not torchvision.extension._has_ops():
    raise RuntimeError("operator torchvision::nms does not exist")
REAL = True
"""


def _fake_torchvision(tmp_path: Path, has_ops: bool) -> Path:
    pkg = tmp_path / "torchvision"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_FAKE_INIT)
    (pkg / "extension.py").write_text(f"def _has_ops():\n    return {has_ops}\n")
    for name in ("_meta_registrations", "_autograd_registrations"):
        (pkg / f"{name}.py").write_text(_FAKE_REGISTRATIONS)
    return tmp_path


_PROBE = """
    import json, sys
    from fxlint.util.compat import ensure_torchvision_importable
    mode = ensure_torchvision_importable()
    import torchvision
    print(json.dumps({"mode": mode, "file": torchvision.__file__,
                      "real": [getattr(sys.modules[n], "REAL", False) for n in
                               ("torchvision._meta_registrations", "torchvision._autograd_registrations")]}))
"""


def test_extension_loads_nothing_is_changed(tmp_path):
    root = _fake_torchvision(tmp_path, has_ops=True)
    out = _run(_PROBE, pythonpath=root)
    assert out["file"].startswith(str(root))
    assert out["mode"] == "native"
    assert out["real"] == [True, True]  # torchvision's own registration modules ran


def test_extension_fails_stand_ins_let_the_import_complete(tmp_path):
    root = _fake_torchvision(tmp_path, has_ops=False)
    out = _run(_PROBE, pythonpath=root)
    assert out["file"].startswith(str(root))
    assert out["mode"] == "python-only"
    assert out["real"] == [False, False]


def test_after_a_failed_import_the_fallback_still_works(tmp_path):
    """A program that tried ``import torchvision`` first (and caught the error) can still recover."""
    root = _fake_torchvision(tmp_path, has_ops=False)
    out = _run("""
        import json, sys
        """ + _NO_PTH + """
        try:
            import torchvision
            first = "imported"
        except RuntimeError as exc:
            first = str(exc)
        from fxlint.util.compat import ensure_torchvision_importable
        print(json.dumps({"first": first, "mode": ensure_torchvision_importable()}))
    """, pythonpath=root)
    assert "does not exist" in out["first"]
    assert out["mode"] == "python-only"


def test_absent_and_install_is_idempotent_and_lazy():
    out = _run("""
        import importlib.util, json, sys
        from fxlint.util import compat
        compat.install_torchvision_fallback(); compat.install_torchvision_fallback()
        n = sum(type(f).__name__ == "_TorchvisionFallbackFinder" for f in sys.meta_path)  # the .pth's one, if any
        lazy = "torchvision" not in sys.modules
        real_find_spec = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name == "torchvision" else real_find_spec(name, *a)
        print(json.dumps({"finders": n, "lazy": lazy, "mode": compat.ensure_torchvision_importable(),
                          "imported": "torchvision" in sys.modules}))
    """)
    assert out == {"finders": 1, "lazy": True, "mode": "absent", "imported": False}


@needs_torchvision
def test_install_pth_makes_every_interpreter_of_the_venv_import_torchvision_and_transformers(tmp_path):
    """`make venv` writes fxlint.util.compat's .pth into the development venv: there, a plain script imports
    torchvision and transformers' model classes with no fxlint call (the mismatched pair included)."""
    from fxlint.util.compat import PTH_LINE, PTH_NAME, install_pth

    path = install_pth(str(tmp_path))
    assert path == str(tmp_path / PTH_NAME) and (tmp_path / PTH_NAME).read_text() == PTH_LINE
    out = _run(f"""
        import json, site, sys
        site.addsitedir({str(tmp_path)!r})  # as the interpreter does with its own site-packages at start-up
        import torchvision
        res = {{"mode": "native" if torchvision.extension._has_ops() else "python-only"}}
        if {_installed("transformers")!r}:
            from transformers import BertForSequenceClassification  # noqa: F401
        res["fxlint_imported"] = "fxlint" in sys.modules
        print(json.dumps(res))
    """, pythonpath=ROOT)
    assert out["mode"] in ("native", "python-only")
    assert not out["fxlint_imported"]  # the .pth loads fxlint/util/compat.py alone: start-up stays cheap


def test_install_pth_command_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fxlint.util.compat", "--bad"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1 and "usage: python -m fxlint.util.compat --install-pth" in proc.stderr


# --------------------------------------------------------------------------- torchaudio

def _fake_torchaudio(tmp_path: Path, *, error: str | None) -> Path:
    """A package laid out like torchaudio's extension loader: ``_extension.utils._load_lib`` raises
    ``error`` (an OSError message) or loads (``None``); ``_extension/__init__`` records what it returned."""
    root = tmp_path / "pkgs"
    ext = root / "torchaudio" / "_extension"
    ext.mkdir(parents=True)
    (root / "torchaudio" / "__init__.py").write_text("from torchaudio import _extension\n")
    body = "return True" if error is None else f"raise OSError({error!r})"
    (ext / "utils.py").write_text(f"def _load_lib(lib):\n    {body}\n")
    (ext / "__init__.py").write_text("from .utils import _load_lib\nAVAILABLE = _load_lib('_torchaudio')\n")
    return root


_AUDIO_PROBE = """
    import json
    from fxlint.util import compat
    compat.install_torchvision_fallback()
    try:
        import torchaudio
        out = {"available": torchaudio._extension.AVAILABLE, "mode": compat.torchaudio_mode()}
    except OSError as exc:
        out = {"error": str(exc)}
    print(json.dumps(out))
"""


def test_torchaudio_cuda_extension_on_cpu_torch_imports_python_only(tmp_path):
    root = _fake_torchaudio(tmp_path, error="libc10_cuda.so: cannot open shared object file: No such file")
    out = _run(_AUDIO_PROBE, pythonpath=root)
    assert out == {"available": False, "mode": "python-only"}


def test_torchaudio_extension_that_loads_is_left_alone(tmp_path):
    out = _run(_AUDIO_PROBE, pythonpath=_fake_torchaudio(tmp_path, error=None))
    assert out == {"available": True, "mode": "native"}


def test_torchaudio_other_load_errors_propagate(tmp_path):
    """Only a missing dependency means "another build"; a corrupt library is the user's to see."""
    out = _run(_AUDIO_PROBE, pythonpath=_fake_torchaudio(tmp_path, error="invalid ELF header"))
    assert out == {"error": "invalid ELF header"}


def test_real_torchaudio_and_transformers_audio_models_import_and_run():
    pytest.importorskip("torchaudio")
    out = _run("""
        import json, torch
        from transformers import Wav2Vec2Config, Wav2Vec2Model
        import torchaudio
        from torchaudio.models import conformer
        from fxlint.util.compat import torchaudio_mode
        m = conformer.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=1, depthwise_conv_kernel_size=3)
        y, _ = m(torch.randn(1, 20, 16), torch.tensor([20]))
        print(json.dumps({"mode": torchaudio_mode(), "shape": list(y.shape)}))
    """)
    assert out["mode"] in {"native", "python-only"}
    assert out["shape"] == [1, 20, 16]
