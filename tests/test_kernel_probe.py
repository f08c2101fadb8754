"""The probe (fxlint.kernels.probe): the machine answers the parts of a kernel prediction that depend
on this CPU, checked against the audit on a real model; its cache; its budget; and bad input - a probe
that fails gives "unknown", never a crash, never a wrong claim.

Every assertion is about *this* machine: which convs oneDNN reorders differs between CPUs (and
between the portability runs' forced-down modes), so the tests compare the probe with the runtime
here rather than with a list of shapes."""

from __future__ import annotations

import collections
import json
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint
from fxlint import kernels as K
from fxlint.capture.graphs import capture
from fxlint.kernels import probe
from fxlint.kernels.conv import ONEDNN_REORDER
from fxlint.tensor.info import TensorInfo
from tests._sweep import leaf, strides_for

TI = TensorInfo.from_tensor
ONEDNN = torch.backends.mkldnn.enabled and torch.backends.mkldnn.is_available()


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    """Each test measures afresh into a cache of its own."""
    monkeypatch.setenv("FXLINT_CACHE_DIR", str(tmp_path / "cache"))
    probe.clear_memory_cache()
    yield
    probe.clear_memory_cache()


class ConvZoo(nn.Module):
    """Convs whose copies oneDNN decides on CPUs like this one (in the contiguous layout: output and
    input-gradient reorders), beside ATen's own conversions. Each output is returned as it is, so the
    audit's gradient reaches every conv in its output's layout (contiguous), as the model assumes."""

    def __init__(self):
        super().__init__()
        self.strided = nn.Conv2d(4, 8, 3, stride=2)  # input-gradient reorder on AVX512 and AVX2
        self.depthwise3d = nn.Conv3d(4, 4, 3, groups=4, padding=1)  # output reorder on AVX512 and AVX2
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2)  # output reorder on AVX512 and AVX2
        self.plain = nn.Conv2d(4, 8, 3)

    def forward(self, x, clips):
        a = self.strided(x)  # probe: strided
        b = self.depthwise3d(clips)  # probe: depthwise3d
        c = self.up(x)  # probe: up
        d = self.plain(x.transpose(2, 3))  # probe: permuted
        return a, b, c, d


def _inputs():
    torch.manual_seed(0)
    return torch.randn(2, 4, 9, 9), torch.randn(2, 4, 5, 6, 6)


def _runtime_at(audit, file, line):
    return collections.Counter((c.phase, c.bytes) for c in audit.at(file, line)
                               if not (c.grad_fn and "AccumulateGrad" in c.grad_fn) and _numel(c.shape) > 1)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _predicted(pred, itemsize):
    out = collections.Counter()
    for c in pred.copies:
        if int(c.each) > itemsize:
            out[(c.phase, int(c.each))] += c.count
    return out


def test_probe_matches_the_audit_on_a_model():
    """With the probe on, each conv's prediction - forward and backward, measured parts included -
    is exactly what the audit records on the model's own line in a training step; without it, the
    known copies all happen and every other copy lies in a part the prediction calls unknown."""
    model, inputs = ConvZoo().train(), _inputs()
    convs = [n for v in capture(model, inputs).program() for n in v.ops("conv")]
    assert len(convs) == 4
    audit = fxlint.audit(model, inputs, train=True)
    with probe.probing() as stats:
        measured = [K.predict(n) for n in convs]
    static = [K.predict(n) for n in convs]
    for node, pred, plain in zip(convs, measured, static):
        rt = _runtime_at(audit, node.location.file, node.location.line)
        assert not pred.unknown, (node.location.code, pred.unknown)
        assert _predicted(pred, 4) == rt, (node.location.code, pred.copies, rt)
        known = _predicted(plain, 4)
        assert not known - rt, node.location.code  # nothing claimed that the runtime does not do
        for (phase, _), n in (rt - known).items():
            assert not plain.knows(phase), (node.location.code, phase)  # the rest lies in an unknown part
    if ONEDNN:
        assert stats.measured >= 3  # the oneDNN convs were measured (the permuted plain conv too)
        assert all(u.machine and u.reason == ONEDNN_REORDER for p in static for u in p.unknown)
    else:
        assert stats.measured == 0 and not any(p.unknown for p in static)  # native kernels: all known


def test_lint_reports_measured_copies_and_says_so():
    """`fxlint.lint` probes by default: a copy only the machine knows is reported as "measured on this
    machine"; with probe=False the same lint leaves it unknown and says which part in the details."""
    model, inputs = ConvZoo().train(), _inputs()
    on = fxlint.lint(model, inputs, select="FXL202", config=False)
    off = fxlint.lint(model, inputs, select="FXL202", config=False, probe=False)
    assert on.extras["probe"]["measured"] + on.extras["probe"]["cached"] >= (3 if ONEDNN else 0)
    assert off.extras["probe"] == {"measured": 0, "cached": 0, "skipped": 0, "failed": 0, "seconds": 0.0,
                                   "reasons": []}
    measured = [f for f in on.findings if f.details.get("measured")]
    assert all("measured on this machine" in f.message for f in measured)
    assert not any(f.details.get("measured") for f in off.findings)
    unknown = [u for f in off.findings for u in f.details.get("unknown", ())]
    if ONEDNN:
        assert any("onednn-reorder" in u for u in unknown)
    # the permuted input's copy is ATen's: known either way, forward and again in backward
    for rep in (on, off):
        [perm] = [f for f in rep.findings if "x.transpose(2, 3)" in f.message]
        assert perm.bytes == 2 * 4 * 9 * 9 * 4 and perm.details["backward_bytes"] == perm.bytes


def test_answers_are_cached_in_memory_and_on_disk(tmp_path):
    x = leaf((2, 4, 9, 9), strides_for((2, 4, 9, 9)), requires_grad=True)
    w = leaf((8, 4, 3, 3), strides_for((8, 4, 3, 3)), requires_grad=True)
    out = F.conv2d(x, w, stride=2)
    pred = K.predict_conv(TI(x), TI(w), output=TI(out), has_bias=False, stride=(2, 2), grad=True,
                          use_mkldnn=True)
    assert pred.machine_dependent and pred.probe is not None
    with probe.probing() as first:
        a = probe.resolve(pred)
    with probe.probing() as second:
        b = probe.resolve(pred)
    assert a == b and not a.unknown
    assert (first.measured, first.cached, second.measured, second.cached) == (1, 0, 0, 1)
    path = probe.cache_path()
    assert path is not None and path.parent == tmp_path / "cache" and path.is_file()
    data = json.loads(path.read_text())
    [entry] = data["entries"].values()
    assert entry["key"]["machine"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert entry["key"]["machine"]["threads"] == torch.get_num_threads()
    probe.clear_memory_cache()  # a new process: the disk answers
    with probe.probing() as third:
        assert probe.resolve(pred) == a
    assert (third.measured, third.cached) == (0, 1)
    # another thread count is another machine as far as oneDNN is concerned: measured again
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with probe.probing() as fourth:
            probe.resolve(pred, env=K.Env.current())
        assert (fourth.measured, fourth.cached) == (1, 0)
    finally:
        torch.set_num_threads(threads)


def _reorder_pred():
    x = leaf((2, 4, 9, 9), strides_for((2, 4, 9, 9)), requires_grad=True)
    w = leaf((8, 4, 3, 3), strides_for((8, 4, 3, 3)), requires_grad=True)
    out = F.conv2d(x, w, stride=2)
    return K.predict_conv(TI(x), TI(w), output=TI(out), has_bias=False, stride=(2, 2), grad=True,
                          use_mkldnn=True)


@pytest.mark.parametrize("content", ["{not json", '{"format": 1, "entries": []}', '["x"]', ""])
def test_a_corrupt_cache_file_is_no_cache(content):
    path = probe.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with probe.probing() as stats:
        pred = probe.resolve(_reorder_pred())
    assert not pred.unknown and stats.measured == 1
    assert json.loads(path.read_text())["format"] == probe.CACHE_FORMAT  # rewritten, now valid


def test_an_unwritable_cache_is_no_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("FXLINT_CACHE_DIR", str(blocker / "cache"))  # a folder below a file: cannot exist
    with probe.probing() as stats:
        pred = probe.resolve(_reorder_pred())
    assert not pred.unknown and stats.measured == 1
    monkeypatch.setenv("FXLINT_CACHE_DIR", "")  # empty: no disk cache at all
    assert probe.cache_path() is None
    probe.clear_memory_cache()
    with probe.probing() as stats:
        assert not probe.resolve(_reorder_pred()).unknown


def test_probing_is_off_unless_asked():
    pred = _reorder_pred()
    assert probe.resolve(pred) is pred  # no probing() block: nothing runs
    with probe.probing(False):
        assert probe.resolve(pred) is pred


def test_an_op_over_the_size_budget_stays_unknown_and_says_why():
    pred = _reorder_pred()
    with probe.probing(max_mib=0.001) as stats:
        out = probe.resolve(pred)
    assert out.unknown and all("probe budget" in u.why and "probe-max-mib" in u.why for u in out.unknown)
    assert out.copies == pred.copies and stats.skipped == 1 and stats.measured == 0


def test_the_run_time_budget_stops_further_probes():
    with probe.probing(time_budget_s=0.0) as stats:
        out = probe.resolve(_reorder_pred())
    assert out.unknown and stats.skipped == 1 and "time budget" in out.unknown[0].why


def _pred_with_runner(name, **args):
    call = probe.OpCall(name, (probe.Operand.dense("input", (2, 3), torch.float32, True),), tuple(args.items()),
                        train=True)
    part = K.Unknown("forward", "output", "test", "a test part")
    return K.KernelPrediction("test", "test: path", (), (part,), probe=call)


@pytest.fixture
def runners():
    added = []

    def add(name, fn):
        probe.RUNNERS[name] = fn
        added.append(name)

    yield add
    for name in added:
        probe.RUNNERS.pop(name, None)


@pytest.mark.parametrize("error", [RuntimeError("expected a positive-definite matrix"),
                                   MemoryError(), RuntimeError("DefaultCPUAllocator: can't allocate memory"),
                                   NotImplementedError('"conv_depthwise2d" not implemented for \'Half\'')])
def test_a_failing_probe_gives_unknown_never_a_crash(runners, error):
    def boom(t):
        raise error

    runners("boom", boom)
    pred = _pred_with_runner("boom")
    with probe.probing() as stats:
        out = probe.resolve(pred)
    assert out.unknown and out.copies == () and stats.failed == 1
    assert "the probe failed" in out.unknown[0].why and type(error).__name__ in out.unknown[0].why
    assert not os.path.exists(probe.cache_path())  # failures are not written to disk


def test_a_dtype_the_cpu_lacks_gives_unknown():
    """A conv in a dtype this CPU has no kernel for (float8): the part stays unknown, with why."""
    dt = torch.float8_e4m3fn
    call = probe.OpCall("conv", (probe.Operand.dense("input", (1, 2, 4, 4), dt),
                                 probe.Operand.dense("weight", (2, 2, 3, 3), dt)),
                        (("transposed", False), ("groups", 1), ("stride", (1, 1)), ("padding", (0, 0)),
                         ("dilation", (1, 1)), ("output_padding", (0, 0))))
    pred = K.KernelPrediction("conv2d", "conv2d: test", (), (K.Unknown("forward", "output", "x", "test"),),
                              probe=call)
    with probe.probing() as stats:
        out = probe.resolve(pred)
    assert out.unknown and "the probe failed" in out.unknown[0].why and stats.failed == 1
    assert "Float8" in out.unknown[0].why


def test_an_output_of_another_shape_is_not_trusted(runners):
    runners("wrong", lambda t: t["input"].sum(0))
    pred = _pred_with_runner("wrong")
    pred = pred.with_(probe=probe.OpCall("wrong", pred.probe.operands, (), train=True, outputs=((2, 3),)))
    with probe.probing():
        out = probe.resolve(pred)
    assert out.unknown and "not the graph's" in out.unknown[0].why


def test_a_running_profiler_is_not_disturbed():
    pred = _reorder_pred()
    with torch.profiler.profile() as prof, probe.probing() as stats:
        x = torch.ones(4).clone()
        out = probe.resolve(pred)
    assert out.unknown and "profiler is already running" in out.unknown[0].why and stats.failed == 1
    assert any(e.name == "aten::clone" for e in prof.events())  # the user's profile is intact
    assert x.sum() == 4


def test_probe_runs_real_ops_inside_fake_and_device_modes():
    """Inside a compile backend values are fake tensors, and a user may lint under
    `with torch.device("meta")`: the probe still runs real CPU ops."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    pred = _reorder_pred()
    with probe.probing() as stats, FakeTensorMode(), torch.device("meta"):
        out = probe.resolve(pred)
    assert not out.unknown and stats.measured == 1


def test_the_probe_leaves_the_rng_and_grad_mode_alone():
    pred = _reorder_pred()
    torch.manual_seed(123)
    expect = torch.rand(3)
    torch.manual_seed(123)
    with probe.probing(), torch.no_grad():
        probe.resolve(pred)
        assert not torch.is_grad_enabled()
    assert torch.equal(torch.rand(3), expect)


def test_compile_backend_probes_only_when_asked():
    from fxlint.backend import BackendOptions
    from fxlint.errors import ConfigError

    assert BackendOptions.parse({}).probe is False
    assert BackendOptions.parse({"probe": True}).probe is True
    with pytest.raises(ConfigError, match="probe"):
        BackendOptions.parse({"probe": "yes"})
    model, inputs = ConvZoo().train(), _inputs()
    # what this machine measures for these convs (an output reorder is reported as a forward copy)
    expected = any(f.details.get("measured") for f in fxlint.lint(model, inputs, select="FXL202", config=False).findings)
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(model, backend="fxlint", options={"inner": "eager", "select": "FXL202"})(*inputs)
    assert not any(f.details.get("measured") for f in session.findings)
    assert any(f.details.get("unknown") for f in session.findings) == ONEDNN  # said, not guessed
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(model, backend="fxlint", options={"inner": "eager", "select": "FXL202", "probe": True})(*inputs)
    assert any(f.details.get("measured") for f in session.findings) == expected
    assert not any(f.details.get("unknown") for f in session.findings)
    torch._dynamo.reset()


# --------------------------------------------------------------------------- configuration and CLI

CONV_SOURCE = """
import torch
import torch.nn as nn


class Strided(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2)

    def forward(self, x):
        return self.up(x.transpose(2, 3))


def make():
    return Strided(), (torch.randn(2, 4, 9, 9),)
"""


@pytest.mark.parametrize("body,needles", [
    ('probe = "yes"\n', ["'probe'", "must be true or false"]),
    ("probe-max-mib = 0\n", ["'probe-max-mib'", "positive number of MiB"]),
    ("probe-max-mib = -5\n", ["'probe-max-mib'", "positive number of MiB"]),
    ('probe-max-mib = "big"\n', ["'probe-max-mib'", "positive number of MiB"]),
    ("probe-max-mib = true\n", ["'probe-max-mib'", "positive number of MiB"]),
    ('probe_max_mib = 3\n', ["unknown key 'probe_max_mib'", "did you mean 'probe-max-mib'"]),
])
def test_bad_probe_config_names_key_and_file(make_project, body, needles):
    from fxlint.project.config import resolve
    from fxlint.errors import ConfigError

    model = make_project(body, CONV_SOURCE)
    with pytest.raises(ConfigError) as exc:
        resolve(model)
    for needle in [str(model.parents[2] / "pyproject.toml"), *needles]:
        assert needle in str(exc.value)


def test_probe_config_keys_and_explicit_arguments(make_project, tmp_path, monkeypatch):
    from fxlint.project.config import resolve
    from fxlint.errors import ConfigError
    from tests.conftest import load_model

    assert resolve(config=False).probe is True  # lint probes by default
    model = make_project("probe = false\nprobe-max-mib = 64\n", CONV_SOURCE)
    s = resolve(model)
    assert (s.probe, s.probe_max_mib) == (False, 64.0)
    assert s.describe()["probe"] is False and s.describe()["probe-max-mib"] == 64.0
    assert resolve(model, probe=True).probe is True  # an explicit argument wins
    with pytest.raises(ConfigError, match="probe must be True or False"):
        resolve(model, probe="on")
    m, x = load_model(model)
    off = fxlint.lint(m, x, select="FXL202")
    assert off.extras["probe"]["measured"] == off.extras["probe"]["cached"] == 0
    on = fxlint.lint(m, x, select="FXL202", probe=True)
    assert on.extras["probe"]["measured"] == (1 if ONEDNN else 0)
    tiny = make_project("probe-max-mib = 0.0001\n", CONV_SOURCE, root=model.parents[2].parent / "tiny")
    m, x = load_model(tiny)
    monkeypatch.setenv("FXLINT_CACHE_DIR", str(tmp_path / "fresh"))  # not measured yet: the budget applies
    probe.clear_memory_cache()
    skipped = fxlint.lint(m, x, select="FXL202")
    assert skipped.extras["probe"]["skipped"] == (1 if ONEDNN else 0)
    if ONEDNN:
        assert any("probe-max-mib" in u for f in skipped.findings for u in f.details["unknown"])


def test_cli_no_probe_and_env(make_project):
    from tests.conftest import run_cli

    model = make_project(None, CONV_SOURCE)
    on = run_cli("lint", f"{model}:make", "--select", "FXL202", "--format", "json", "--fail-on", "never")
    off = run_cli("lint", f"{model}:make", "--select", "FXL202", "--format", "json", "--fail-on", "never",
                  "--no-probe")
    assert on.returncode == off.returncode == 0, (on.stderr, off.stderr)
    assert "--no-probe" in run_cli("lint", "--help").stdout
    env = run_cli("env")
    assert env.returncode == 0, env.stderr
    assert f"cpu_capability:     {torch.backends.cpu.get_cpu_capability()}" in env.stdout
    assert "probe cache:" in env.stdout and os.environ["FXLINT_CACHE_DIR"] in env.stdout
    data = json.loads(run_cli("env", "--format", "json").stdout)
    assert data["torch"] == torch.__version__ and data["num_threads"] == torch.get_num_threads()
    assert data["probe_cache"]["path"].startswith(os.environ["FXLINT_CACHE_DIR"])
    caps = dict(torch.cpu.get_capabilities())  # the CPU's features, as this machine has them
    assert data["cpu_features"] == [f for f, k in (("avx512_bf16", "avx512_bf16"), ("avx512_fp16", "avx512_fp16"),
                                                   ("amx", "amx_tile")) if caps.get(k)]
    assert f"cpu_family:         {data['cpu_family']}" in env.stdout
    # the probed run leaves no part unknown; the other measures nothing and names the parts it leaves
    # (the subprocess has its own oneDNN switch, so this holds whatever this session's mode)
    on_f, off_f = json.loads(on.stdout)["findings"], json.loads(off.stdout)["findings"]
    assert on_f and not any(f["details"].get("unknown") for f in on_f)
    assert not any(f["details"].get("measured") for f in off_f) and "measured on this machine" not in off.stdout
