"""A rule's whole output on its fixture, as stable text for snapshot tests.

``rule_output("FXL401")`` lints ``tests/fixtures/rules/fxl401.py`` with FXL401 alone (no project
configuration) and renders every finding, suppressed ones too, one block each in source order:
code, severity, the fixture line and its source, bytes, backward bytes, the message and the fix.
Paths are relative to the fixture, sizes exact, nothing depends on time or the machine's paths.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fxlint.findings import Finding

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"


def load_fixture(code: str):
    path = FIXTURES / f"{code.lower()}.py"
    spec = importlib.util.spec_from_file_location(f"fxlint_fixture_{code.lower()}", path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _block(f: Finding, fixture: str) -> str:
    where = f"{fixture}:{f.line}" if f.file else f"<graph>:{f.node}"
    lines = [f"{f.code} {f.severity.value} {where}" + (" (suppressed)" if f.suppressed else "")]
    if f.source:
        lines.append(f"  source: {f.source}")
    cost = []
    if f.bytes is not None:
        cost.append(f"bytes={f.bytes}")
    if f.compiled == "survives" and f.compiled_bytes is not None:
        cost.append(f"compiled_bytes={f.compiled_bytes}")
    if f.bytes_expr:
        cost.append(f"bytes_expr={f.bytes_expr}")
    if f.backward_bytes is not None:
        cost.append(f"backward_bytes={f.backward_bytes}")
    if f.copy_sizes is not None and len(f.copy_sizes) > 1:
        cost.append(f"copy_sizes={list(f.copy_sizes)}")
    if f.repeats > 1:
        cost.append(f"repeats={f.repeats}")
    if f.module_path:
        cost.append(f"module={f.module_path}")
    if cost:
        lines.append("  " + " ".join(cost))
    lines.append(f"  message: {f.message}")
    if f.fix:
        lines.append(f"  fix: {f.fix}")
    return "\n".join(lines)


def rule_output(code: str, *, make: str = "make", train: bool = True) -> str:
    """The rule's findings on its fixture, rendered for a snapshot (see module docstring)."""
    import fxlint

    mod = load_fixture(code)
    model, inputs = getattr(mod, make)()
    if not train and hasattr(model, "eval"):
        model = model.eval()
    report = fxlint.lint(model, inputs, select=code, config=False)
    return render_findings([*report.findings, *report.suppressed], f"{code.lower()}.py")


def render_findings(findings: list[Finding], fixture: str) -> str:
    """Findings rendered for a snapshot, in source order (``fixture``: the file name shown)."""
    found = sorted(findings, key=lambda f: (f.line or 0, f.code, f.message))
    text = "\n\n".join(_block(f, fixture) for f in found) or "(no findings)"
    return text + "\n"


def lint_fixture(code: str, *, train: bool, confirm: bool = False):
    """The rule alone on its fixture: in training (``train()``), or in inference (``eval()`` under
    ``torch.no_grad()``), as the inference-only rules (FXL404, FXL405) are used."""
    import torch

    import fxlint

    model, inputs = load_fixture(code).make()
    model.train(train)
    with torch.set_grad_enabled(train):
        return fxlint.lint(model, inputs, select=code, confirm=confirm, config=False)


def kernel_env() -> str:
    """The kernel environment a CPU-dependent rule's output depends on: ``onednn`` where torch's
    oneDNN (mkldnn) convolutions run, ``no-onednn`` where they are off or missing (the portability
    run ``FXLINT_TEST_MKLDNN=0``). Snapshots of FXL202/FXL204 are kept per environment."""
    import torch

    return "onednn" if torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled else "no-onednn"


def marked_lines(code: str, mark: str) -> list[int]:
    """The fixture's lines commented ``# positive: ...`` (``mark="positive"``) or ``# negative: ...``;
    ``# positive(onednn): ...`` lines are positives only where oneDNN runs (``kernel_env``)."""
    text = (FIXTURES / f"{code.lower()}.py").read_text(encoding="utf-8")
    marks = [f"# {mark}:"] + ([f"# {mark}({kernel_env()}):"] if mark == "positive" else [])
    return [i for i, line in enumerate(text.splitlines(), 1) if any(m in line for m in marks)]


def reported_lines(output: str, code: str) -> set[int]:
    """The fixture lines ``rule_output`` reports a finding on."""
    name = f"{code.lower()}.py:"
    return {int(word.split(":")[1]) for line in output.splitlines() if line.startswith(code)
            for word in line.split() if word.startswith(name)}
