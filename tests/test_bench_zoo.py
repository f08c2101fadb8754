"""`fxlint bench --zoo`'s variant selection on every bundled model (its own module: pytest-xdist's
loadscope runs it beside tests/test_bench.py)."""

from __future__ import annotations

import torch


def test_bench_zoo_variant_selection_on_every_bundled_model():
    """The cheap part of `fxlint bench --zoo` on every bundled model, both modes: each variant is built,
    run once and compared with the original (no timing loop, no audit; the compiled variants through
    aot_eager instead of Inductor, which compiles the same Dynamo graphs in a fraction of the time).
    Every variant is correct or skipped with its reason: a new model that breaks the benchmark fails
    here, not in a user's `fxlint bench --zoo`."""
    from fxlint.benchmarks import harness
    from fxlint.cli.commands._common import zoo_models
    from tests.conftest import load_model

    failed, skipped, ok = [], [], 0
    for path in zoo_models("models"):
        model, inputs = load_model(path)
        rows = harness.bench_model(path, model, inputs, modes=["infer", "train"],
                                   backends=["eager", "inductor"], measure=False, compiler="aot_eager",
                                   say=lambda m: None)
        # fxlint's variants leave the user's model as they found it: real parameters and buffers (an export
        # once left a FakeTensor in a buffer the model updates with `+=`, and every later compile failed)
        fake = [n for n, t in (*model.named_parameters(), *model.named_buffers())
                if isinstance(t, torch._subclasses.FakeTensor)]
        assert not fake, (path, fake)
        torch._dynamo.reset()
        for r in rows:
            if r.skipped:
                skipped.append((path, r.mode, r.variant, r.skipped))
            elif r.error or not r.correct:
                failed.append((path, r.mode, r.variant, r.error or f"results differ: {r.max_out_diff}"))
            else:
                ok += 1
    assert not failed, failed
    assert ok > 3 * len(skipped), (ok, skipped)  # skipping is the exception
    # every skip names a reason that is not fxlint's: graph breaks for the whole-model rewrite
    assert all(v == "eager+rewrite" and why.startswith("graph breaks") for _, _, v, why in skipped), skipped
