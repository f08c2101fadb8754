"""The lint-speed benchmark runs and its figures are sane (not a timed test)."""

from __future__ import annotations

from fxlint.benchmarks import lint_speed


def test_synthetic_graph_has_the_requested_size_and_every_op_family():
    gm = lint_speed.synthetic_graph(400)
    assert 395 <= len(gm.graph.nodes) <= 400
    targets = {str(n.target) for n in gm.graph.nodes}
    assert any("getitem" in t for t in targets) and "contiguous" in targets


def test_run_small_and_render():
    result = lint_speed.run(layers=(1,), inductor_layers=(), nodes=(300, 600), repeats=1, progress=lambda m: None)
    assert result.stack[0].nodes > 10 and result.stack[0].analysis_s > 0 and result.stack[0].capture_s > 0
    assert [p.nodes for p in result.synthetic] == [300, 600] or all(p.nodes > 290 for p in result.synthetic)
    d = result.to_dict()
    assert set(d["linear_fit"]) == {"intercept_s", "seconds_per_node", "r2", "per_node_max_over_min"}
    text = lint_speed.render(result)
    assert "us per node" in text and "machine:" in text
