"""fxlint under torch.distributed, with real process groups: two gloo ranks on this machine.

The ranks start once for the module (``tests/dist_pool.py``) and run the scenarios of
``tests/dist_scenarios.py``; each test reads what every rank returned. Every run has a deadline
after which the ranks are killed, and the process group's own timeout is short, so a rank that
fails cannot hang the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from tests.conftest import line_of
from tests.dist_pool import RankFailure, RankPool

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available")

SCENARIOS = Path(__file__).resolve().parent / "dist_scenarios.py"


def line(marker: str) -> int:
    return line_of(SCENARIOS, f"marker: {marker}")


@pytest.fixture(scope="module")
def ranks():
    pool = RankPool(world=2)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def policies(ranks):
    """``RankDependent`` under each reporting policy, once (the first policy's keys stay in the store)."""
    return ranks.run("ranks")


def _essentials(findings: list[dict]) -> list[tuple]:
    return [(f["code"], f["severity"], f["line"], f["bytes"], f["message"]) for f in findings]


def _warnings(log: list) -> list[str]:
    return [msg for level, msg in log if level == "WARNING"]


# --------------------------------------------------------------------------- DDP


def test_ddp_pieces_are_linted_as_the_graph_they_were_split_from(ranks):
    """A 12-layer MLP under DDP with 1 MB buckets: DDPOptimizer splits its graph, and fxlint
    reports what it reports for the MLP without DDP: no break at DDPOptimizer's splits, the same
    codes, lines, bytes and messages, and the detach in the last bucket names the parameters it
    cuts in the earlier ones. One rank logs them, and says it is the first to find them."""
    results = ranks.run("ddp", optimize_ddp=True)
    for r in results:
        assert r["pieces"] >= 3, "DDPOptimizer did not split the graph: the test proves nothing"
        assert r["equal"] and r["grads"] == 4  # trains: layers 10 and 11 get gradients, the rest are cut
        assert not [f for f in r["findings"] if f["code"] == "FXL501"]
        assert _essentials(r["findings"]) == _essentials(r["bare"])
        assert {(f["code"], f["line"]) for f in r["findings"]} == {("FXL301", line("mlp detach")),
                                                                     ("FXL401", line("mlp index"))}
        [cut] = [f for f in r["findings"] if f["code"] == "FXL301"]
        # layer 0 is in the first bucket's piece, the detach after layer 9 in the last one's
        assert "20 parameters of layers" in cut["message"]
        assert "layers.0.{weight, bias}" in cut["message"] and "layers.9.{weight, bias}" in cut["message"]
    loud = [(rank, w) for rank, r in enumerate(results) for w in _warnings(r["log"])]
    assert len(loud) == 1, loud
    rank, text = loud[0]
    assert text.startswith(f"fxlint: rank {rank} of 2 (the first rank to find them): graph")
    assert "2 findings (FXL301, FXL401)" in text and "<unknown>" not in text
    quiet = results[1 - rank]["log"]
    assert any("2 findings, logged by another rank" in msg for _, msg in quiet), quiet


def test_ddp_without_ddp_optimizer(ranks):
    results = ranks.run("ddp", optimize_ddp=False)
    for r in results:
        assert r["pieces"] == 1 and r["equal"]
        assert _essentials(r["findings"]) == _essentials(r["bare"])
        assert {f["code"] for f in r["findings"]} == {"FXL301", "FXL401"}


def test_ddp_with_rewrites_rewrites_and_verifies_each_piece(ranks):
    """options={"rewrite": True}: each DDP piece is rewritten on its own and verified (DDPOptimizer
    hands the pieces fake inputs; the verification runs them on real tensors of the same layout)."""
    for r in ranks.run("ddp_rewrite"):
        assert r["pieces"] >= 3 and r["applied"] == ["FXL401"] and not r["skipped"] and not r["errors"]
        assert r["equal"] and r["grads"] == 24


# --------------------------------------------------------------------------- FSDP2


def test_fsdp2_compiled_per_block(ranks):
    """torchtitan's recipe: each block compiled, then sharded. The findings are the blocks' own,
    as without FSDP; nothing about FSDP's all-gathers, reshards or hooks."""
    for r in ranks.run("fsdp", mode="block"):
        assert r["param_type"] == "DTensor" and r["close"]
        assert _essentials(r["findings"]) == _essentials(r["bare"])
        assert [(f["code"], f["line"]) for f in r["findings"]] == [("FXL401", line("block index"))]


def test_fsdp2_compiled_whole(ranks):
    """The whole sharded model compiled: Dynamo breaks the graph at every call into a sharded
    block (FSDP's hooks are torch._dynamo.disable'd), and compiles each block as a graph of its
    own. Those breaks are FSDP's: no FXL501; the model's findings are the unsharded model's (a
    block's finding once, for one call of the block, instead of once per block inlined)."""
    for r in ranks.run("fsdp", mode="whole"):
        assert r["param_type"] == "DTensor" and r["close"]
        assert r["graphs"] >= 3  # the breaks at the block calls happened
        codes = {f["code"] for f in r["findings"]}
        assert "FXL501" not in codes, r["findings"]
        mine = {(f["code"], f["line"], f["bytes"], f["message"]) for f in r["findings"]}
        bare = {(f["code"], f["line"], f["bytes"], f["message"]) for f in r["bare"]}
        assert mine == bare
        assert {f["line"] for f in r["findings"]} == {line("net index"), line("block index")}
        assert not [msg for _, msg in r["log"] if "fsdp" in msg.lower() or "disable" in msg]


# --------------------------------------------------------------------------- ranks


def test_ranks_report_once_by_default_and_say_which_rank(policies):
    """Rank 1 detaches (rank-dependent code); both ranks index. By default each finding is logged
    once in the job, by the first rank that finds it: the shared FXL401 by one rank, the FXL301
    by rank 1, the only one that has it."""
    results = policies
    first = [r["first"] for r in results]
    logged = [(rank, msg) for rank, f in enumerate(first) for _, msg in f["log"] if ": FXL" in msg]
    fxl401 = [(rank, msg) for rank, msg in logged if "FXL401" in msg.split("[")[0]]
    fxl301 = [(rank, msg) for rank, msg in logged if "FXL301" in msg.split("[")[0]]
    assert len(fxl401) == 1 and len(fxl301) == 1, logged
    assert fxl301[0][0] == 1
    summary = _warnings(first[1]["log"])
    assert summary and summary[0].startswith("fxlint: rank 1 of 2 (the first rank to find")
    # collect() holds each rank's own findings
    assert [f["code"] for f in first[0]["local"]] == ["FXL401"]
    assert sorted(f["code"] for f in first[1]["local"]) == ["FXL301", "FXL401"]
    assert [r["rank"] for r in results] == [0, 1]


def test_ranks_all_and_one_rank(policies):
    results = policies
    every = [_warnings(r["all"]["log"]) for r in results]
    assert every[0] and every[0][0].startswith("fxlint: rank 0 of 2: graph") and "(FXL401)" in every[0][0]
    assert every[1] and every[1][0].startswith("fxlint: rank 1 of 2: graph") and "(FXL301, FXL401)" in every[1][0]
    only0 = [r["0"]["log"] for r in results]
    assert _warnings(only0[0]) and not _warnings(only0[1])
    assert any("logged by rank 0" in msg for _, msg in only0[1])


def test_gather_says_which_ranks_found_what(policies):
    results = policies
    gathered = [r["gathered"] for r in results]
    assert gathered[0] == gathered[1]  # every rank gets the same merged list
    by_code = {f["code"]: f for f in gathered[0]}
    assert by_code["FXL401"]["ranks"] == [0, 1] and "rank-dependent" not in by_code["FXL401"]["message"]
    assert by_code["FXL301"]["ranks"] == [1]
    assert by_code["FXL301"]["message"].endswith("Found on rank 1 of 2 only (rank-dependent code).")


def test_gather_never_waits_past_its_deadline_for_a_missing_rank(ranks):
    late, prompt = ranks.run("gather_with_a_late_rank", delay_rank=1, deadline=3)
    assert late["missing"] == [1] and late["errors"] == ["rank 1 sent no findings within 3 s"]
    assert 2.5 < late["waited"] < 10
    assert prompt["missing"] == []  # the late rank finds the others' findings already there


# --------------------------------------------------------------------------- collectives


def test_collective_rules_on_two_ranks_agree_with_the_runtime(ranks):
    for r in ranks.run("collectives"):
        found = {(f["code"], f["line"]): f for f in r["findings"]}
        assert set(found) == {
            ("FXL601", line("gather of a transpose")),
            ("FXL601", line("reduce_scatter of a transpose")),
            ("FXL601", line("all_to_all of a transpose")),
            ("FXL602", line("reduce of a temporary")),
            ("FXL603", line("cat of the gathered list")),
        }
        # FXL601's bytes are the copy the profiler sees the functional collective make
        for marker, op in (("gather of a transpose", "all_gather_into_tensor"),
                           ("reduce_scatter of a transpose", "reduce_scatter_tensor"),
                           ("all_to_all of a transpose", "all_to_all_single")):
            assert found[("FXL601", line(marker))]["bytes"] == r["extra_copy"][op] > 0
        # FXL602: run eagerly, the tensor really is left unreduced; the kept copy is reduced
        assert r["temporary"] == {"unchanged": True, "kept_reduced": True}
        assert found[("FXL602", line("reduce of a temporary"))]["severity"] == "error"
        # FXL603: the list form runs one aten::cat of the gathered size, the tensor form none
        assert r["cat_events"] == {"list": 1, "tensor": 0, "equal": True}
        assert found[("FXL603", line("cat of the gathered list"))]["bytes"] == r["gathered_bytes"]
        # FXL601's error case: eager gloo all_reduce of a view that is not dense is wrong, and writes
        # outside the view
        assert r["eager_strided_all_reduce"]["correct"] is False
        assert r["eager_strided_all_reduce"]["outside_changed"] > 0


# --------------------------------------------------------------------------- the harness itself (last: it kills the ranks)


def test_a_rank_that_does_not_answer_is_killed_not_waited_for(ranks):
    import time

    start = time.monotonic()
    with pytest.raises(RankFailure, match="did not answer within 2 s; ranks killed"):
        ranks.run("sleep", seconds=60, timeout=2)
    assert time.monotonic() - start < 15
