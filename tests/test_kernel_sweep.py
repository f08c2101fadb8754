"""Property sweep: the kernel stride model (fxlint.kernels) against what the profiler records.

For a fixed, seeded sample of each family's grid (shapes, permutations,
transposes, step slices, padded rows, expanded dims, float32/bfloat16/float16,
contiguous and channels_last, forward and training), every copy the model
predicts - operand, bytes, forward or backward - must be a copy the runtime
makes, and every copy the runtime makes must be predicted or lie in a part the
prediction declares unknown. ``FXLINT_SWEEP=full`` runs the whole grids
(47,512 cases; most of an hour on two busy cores).

The sweep asserts what is true on the machine it runs on: the paths depend on
the CPU (oneDNN's bfloat16 kernels, its ISA) and on the switches the
portability runs flip (``make test-portability``: ``ATEN_CPU_CAPABILITY``,
``ONEDNN_MAX_CPU_ISA``, ``FXLINT_TEST_MKLDNN=0``).

Documented limitations are asserted here too, so they cannot widen silently:
a conv prediction leaves a part unknown only where oneDNN, not ATen, decides
(its reorders on this CPU), and the probe (``fxlint.kernels.probe``) answers
exactly those parts.
"""

from __future__ import annotations

import os

import pytest
import torch

from fxlint import kernels as K
from fxlint.kernels.conv import ONEDNN_AMX_CONV1D, ONEDNN_REORDER
from tests import _sweep

FULL = os.environ.get("FXLINT_SWEEP") == "full"
#: the share of BUDGET to run (the portability runs of `make test-portability` run half in each mode)
SCALE = float(os.environ.get("FXLINT_SWEEP_SCALE", "1"))
#: cases per family in the default run (the whole suite's sweep stays well under a minute)
BUDGET = {fam: max(20, int(n * SCALE)) for fam, n in
          {"matrix": 260, "bmm": 180, "matmul": 260, "conv": 300, "norm": 200, "pad": 100, "sdpa": 78, "einsum": 120,
           "spatial": 120, "rnn": 240, "spectral": 60}.items()}
#: kernels whose backward the model does not follow (declared with a machine-independent Unknown part)
BACKWARD_NOT_MODELLED = {"bmm", "baddbmm", "linear", "matmul", "rms_norm", "instance_norm", "batch_norm",
                         "scaled_dot_product_attention", "einsum"}


#: the families of ``tests/_sweep.py`` (every kernel family with a model)
FAMILIES = list(_sweep.FAMILIES)


def _run(family: str) -> list[_sweep.Outcome]:
    cases = _sweep.sample(family, None if FULL else BUDGET[family])
    return [_sweep.run_case(c) for c in cases]


def _report(outcomes: list[_sweep.Outcome]) -> str:
    bad = [o for o in outcomes if o.status != "ok"]
    lines = [f"{o.status}: {o.name} [{o.path}] {o.why}\n    runtime   {o.runtime}\n    predicted {o.predicted}"
             for o in bad[:25]]
    return f"{len(bad)} of {len(outcomes)} cases disagree:\n" + "\n".join(lines)


@pytest.mark.parametrize("family", FAMILIES)
def test_model_matches_runtime(family: str) -> None:
    outcomes = _run(family)
    assert all(o.status == "ok" for o in outcomes), _report(outcomes)
    copying = sum(1 for o in outcomes if o.runtime)
    assert copying >= len(outcomes) // 10, "the sample hardly exercises copies; the sweep would be vacuous"


@pytest.mark.parametrize("family", FAMILIES)
def test_unknown_parts_are_only_the_documented_ones(family: str) -> None:
    """A conv leaves unknown only what oneDNN decides on this CPU (its reorders, on oneDNN paths,
    marked machine-dependent; on a CPU with AMX also a bfloat16/float16 conv1d's input copies), a two-sided istft
    the casts of its window to complex; the other families only the backward of the kernels whose backward
    is not modelled (not machine-dependent: a probe is not asked)."""
    for case in _sweep.sample(family, None if FULL else BUDGET[family]):
        fn, args, train, predictor = case.build()
        pred = predictor(*args)
        assert pred is not None, case.name
        for part in pred.unknown:
            if family == "conv":
                assert part.machine and "oneDNN" in pred.path, (case.name, part)
                # oneDNN's reorders; and, on a CPU with AMX, a reduced-precision conv1d's input copies
                assert part.reason == ONEDNN_REORDER or (
                    part.reason == ONEDNN_AMX_CONV1D and K.Env.current().amx and case.name.startswith("conv1d ")
                    and "torch.float32" not in case.name), (case.name, part)
                assert pred.probe is not None, case.name  # the probe can answer it
            elif family == "spatial" and part.phase == "forward":
                from fxlint.kernels.spatial import UPSAMPLE_NCHW

                assert part == UPSAMPLE_NCHW and pred.kernel == "upsample", (case.name, part)
                assert part.machine and pred.probe is not None, case.name  # the probe can answer it
            elif family == "spectral" and part.phase == "forward":
                from fxlint.kernels.spectral import COMPLEX_CASTS

                # a complex (two-sided) result casts the window and envelope: dtype casts, left out on purpose
                assert part == COMPLEX_CASTS and "onesided=False" in case.name, (case.name, part)
            else:
                assert not part.machine and part.phase == "backward" and part.operand == "*", (case.name, part)
                assert pred.kernel in BACKWARD_NOT_MODELLED, (case.name, part)


def test_probe_answers_the_machine_dependent_parts_exactly(tmp_path, monkeypatch) -> None:
    """With the probe, a conv whose oneDNN reorders the model leaves open is predicted exactly: the
    measured copies on fresh random tensors of the same geometry are the copies the runtime makes on
    the sweep's own tensors, and nothing stays unknown."""
    from fxlint.kernels import probe

    monkeypatch.setenv("FXLINT_CACHE_DIR", str(tmp_path))
    probe.clear_memory_cache()
    cases = [c for c in _sweep.sample("conv", None if FULL else BUDGET["conv"])
             if (lambda b: (p := b[3](*b[1])) is not None and p.machine_dependent)(c.build())]
    if not cases:
        assert not torch.backends.mkldnn.enabled or not torch.backends.mkldnn.is_available(), \
            "oneDNN runs convs here, yet no sampled case depends on it"
        pytest.skip("no oneDNN conv on this machine (mkldnn disabled): nothing depends on the CPU")
    outcomes = [_sweep.run_case(c, probe=True) for c in cases[: None if FULL else 40]]
    assert all(o.status == "ok" and not o.unknown for o in outcomes), _report(outcomes)
    assert all(o.measured for o in outcomes)


def test_probe_answers_the_upsample_vectorised_path_exactly(tmp_path, monkeypatch) -> None:
    """Nearest/bilinear upsampling of a non-channels_last input: what the vectorised kernel copies is
    this CPU's; with the probe the prediction is exact (whatever the machine does) and nothing stays
    unknown."""
    from fxlint.kernels import probe

    monkeypatch.setenv("FXLINT_CACHE_DIR", str(tmp_path))
    probe.clear_memory_cache()
    cases = [c for c in _sweep.sample("spatial", None if FULL else BUDGET["spatial"])
             if (lambda b: (p := b[3](*b[1])) is not None and p.machine_dependent)(c.build())]
    assert cases and all(c.name.startswith("upsample ") for c in cases), [c.name for c in cases]
    outcomes = [_sweep.run_case(c, probe=True) for c in cases]
    assert all(o.status == "ok" and not o.unknown for o in outcomes), _report(outcomes)
    assert all(o.measured for o in outcomes)


def test_sweep_covers_the_dimensions_the_issue_names() -> None:
    names = " ".join(c.name for fam in _sweep.FAMILIES for c in _sweep.sample(fam, None if FULL else BUDGET[fam]))
    for needle in ("float32", "bfloat16", "float16", "step", "exp", "cl", "mT", "p0213", "train=True", "rg=True",
                   "tr=True", "g="):
        assert needle in names, needle
