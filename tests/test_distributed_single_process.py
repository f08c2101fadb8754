"""fxlint and torch.distributed in one process: a DDP- or FSDP-wrapped model linted as the model, the
CLI on a factory that needs a process group, the reporting options, and the pieces of the
cross-rank machinery that need no second rank."""

from __future__ import annotations

import traceback

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

import fxlint
from fxlint.errors import ConfigError
from tests.conftest import line_of, run_cli
from tests.dist_pool import one_rank_group

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available")


@pytest.fixture
def group():
    with one_rank_group():
        yield


def _codes_lines(report) -> list[tuple[str, int | None, int | None, str]]:
    return [(f.code, f.line, f.bytes, f.message) for f in report.findings]


def test_a_ddp_wrapped_model_is_linted_as_the_model(group):
    from tests.dist_scenarios import MLP

    torch.manual_seed(0)
    model = MLP(n=3, d=16, cut=1)
    x = torch.randn(4, 16)
    wrapped = nn.parallel.DistributedDataParallel(model)
    assert _codes_lines(fxlint.lint(wrapped, x, config=False)) == _codes_lines(fxlint.lint(model, x, config=False))


def test_a_function_calling_a_ddp_model_reports_none_of_ddps_own_breaks(group):
    from tests.dist_scenarios import MLP

    wrapped = nn.parallel.DistributedDataParallel(MLP(n=3, d=16, cut=1))
    report = fxlint.lint(lambda x: wrapped(x) * 2, torch.randn(4, 16), config=False)
    assert {f.code for f in report.findings} == {"FXL301", "FXL401"}


def test_an_fsdp2_model_in_one_process(group):
    """A model sharded with fully_shard over one rank: its hooks run outside Dynamo, which breaks
    the graph at every sharded block; those are FSDP's breaks, not the model's."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from tests.dist_scenarios import Net

    torch.manual_seed(0)
    sharded, bare = Net(), Net()
    mesh = init_device_mesh("cpu", (1,))
    for block in sharded.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    x = torch.randn(8, 16)
    report = fxlint.lint(sharded, x, config=False)
    assert report.graph_breaks == 0 and "FXL501" not in report.codes()
    assert {(f.code, f.line) for f in report.findings} == {(f.code, f.line) for f in fxlint.lint(bare, x, config=False)}


def test_cli_lints_a_factory_that_wraps_its_model_in_ddp(write_module, tmp_path):
    """The factory builds DDP(model) without starting a process group: fxlint starts a one-rank
    group and runs it again."""
    path = write_module(
        """
        import torch, torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(16, 16)

            def forward(self, x):
                return self.lin(x)[:, [0, 2, 4, 6]]

        def make():
            return nn.parallel.DistributedDataParallel(M()), torch.randn(4, 16)
        """,
        name="ddp_factory.py",
    )
    proc = run_cli("lint", f"{path}:make", "--no-config", "--format", "json", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr  # a warning: the default --fail-on
    import json

    [f] = json.loads(proc.stdout)["findings"]
    assert f["code"] == "FXL401" and f["line"] == line_of(path, "[:, [0, 2, 4, 6]]")


def test_a_factory_that_starts_its_own_group_from_the_environment():
    from fxlint.capture.distributed import single_process_env

    assert not dist.is_initialized()
    with single_process_env():
        dist.init_process_group("gloo")  # env://, as a training script does under torchrun
    try:
        assert dist.get_world_size() == 1
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("value", ["some", -1, True, 1.5])
def test_a_bad_ranks_option_is_the_users_error(value):
    from fxlint.backend import BackendOptions

    with pytest.raises(ConfigError, match="ranks"):
        BackendOptions.parse({"ranks": value})


def test_good_ranks_options_are_not_passed_to_the_inner_backend():
    from fxlint.backend import BackendOptions

    for value in ("first", "all", 0, 3):
        opts = BackendOptions.parse({"ranks": value})
        assert opts.ranks == value and "ranks" not in opts.passthrough


def test_one_process_has_no_rank_and_gather_is_the_report():
    with fxlint.collect() as session:
        pass
    assert session.rank is None
    report = session.gather(timeout=1)
    assert report.findings == [] and "missing_ranks" not in report.extras


def test_merge_keeps_each_finding_once_with_the_ranks_that_found_it():
    from fxlint.capture.distributed import merge
    from fxlint.findings import Finding, Severity

    def f(code: str, line: int) -> Finding:
        return Finding(code=code, name="x", severity=Severity.WARNING, message="m.", file="a.py", line=line)

    merged = merge({0: [f("FXL401", 3)], 1: [f("FXL301", 2), f("FXL401", 3)], 2: [f("FXL401", 3)]}, world=3)
    assert [(m.code, m.ranks) for m in merged] == [("FXL401", (0, 1, 2)), ("FXL301", (1,))]
    assert merged[0].message == "m."
    assert merged[1].message == "m. Found on rank 1 of 3 only (rank-dependent code)."
    assert merged[1].to_dict()["ranks"] == [1]


def test_a_ddp_piece_without_its_original_is_linted_alone_without_the_false_break():
    """If DDPOptimizer's frame cannot be read (another torch), each piece is linted on its own, and
    DDPOptimizer's "intentional graph-break" is still not reported."""
    from torch._dynamo.output_graph import GraphCompileReason

    from fxlint.backend import fxlint_backend

    import torch._dynamo.backends.distributed as ddp_backend

    def piece(gm, example_inputs):
        gm.compile_subgraph_reason = GraphCompileReason(
            "DDPOptimizer intentional graph-break (See Note [DDPOptimizer]).",
            [traceback.FrameSummary(ddp_backend.__file__, 0, "DDPOptimizer")])
        return fxlint_backend(gm, example_inputs, options={"inner": "eager"})

    def fn(x):
        return x[:, [0, 2, 4, 6]]  # the piece's own line

    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(fn, backend=piece)(torch.randn(4, 8))
    assert [(f.code, f.line) for f in session.findings] == [("FXL401", line_of(__file__, "# the piece's own line"))]
    assert session.report().graph_breaks == 0
