"""The package's import structure: no import cycle, no upward import.

Every ``import`` and ``from ... import`` of every module under ``fxlint/`` is read from its AST,
module-level, inside functions and under ``if TYPE_CHECKING:`` alike (a type-only import is still a
dependency a reader follows). Two properties:

* the module graph has no cycle;
* every import goes to the importing module's own layer or a lower one, in the order ``LAYERS``
  declares (the data flow: foundation, data model, capture and the canonical view with its
  analyses, the runtime, the compiled program's verdicts, kernels, passes, rewrites, presentation, the public API, entry points).

A new module must be given its layer here (the most specific prefix wins). The registry finds the
rule and rewrite modules by name (``importlib``), as it finds a plugin's: they sit above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "fxlint"

#: lowest first; a module's layer is that of the longest prefix listed
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("fxlint._present", "fxlint._version", "fxlint.errors", "fxlint.util", "fxlint.tensor.symbolic")),
    ("data model", ("fxlint.findings", "fxlint.tensor", "fxlint.capture.roles", "fxlint.capture.distributed",
                    "fxlint.reporting.grouping", "fxlint.project.baseline")),
    ("capture and the canonical view", (
        "fxlint.canon", "fxlint.tensor.viewable", "fxlint.capture", "fxlint.analysis", "fxlint.registry",
        "fxlint.project", "fxlint.reporting", "fxlint.renderers.ruledoc")),
    ("runtime", ("fxlint.runtime",)),
    ("compiled program", ("fxlint.compiled",)),
    ("kernels", ("fxlint.kernels",)),
    ("passes", ("fxlint.passes",)),
    ("rewrites", ("fxlint.rewrite", "fxlint.srcfix")),
    ("presentation", ("fxlint.renderers", "fxlint.session")),
    ("public API", ("fxlint", "fxlint.backend")),
    ("entry points", ("fxlint.runtime.oracle", "fxlint.testing", "fxlint.benchmarks", "fxlint.cli",
                      "fxlint.pytest_plugin", "fxlint.__main__", "fxlint.integrations")),
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The fxlint modules ``name`` imports (a ``from pkg import x`` of a submodule ``x`` is that module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES and "." in t:
                t = t.rsplit(".", 1)[0]  # `import fxlint.kernels.probe.x` -> the module it names
            if t in MODULES and t != name:
                found.add(t)
    return found


def _layer(name: str) -> int:
    best, layer = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), i
    assert layer is not None, f"{name} has no layer: add it to LAYERS in {__file__}"
    return layer


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for dep in _imports(name, path):
            g.add_edge(name, dep)
    return g


def test_the_import_reader_sees_function_level_and_type_checking_imports():
    g = _graph()
    assert g.has_edge("fxlint.findings", "fxlint._present")  # module level
    assert g.has_edge("fxlint.canon.op_registry", "fxlint.canon.nodes")  # under TYPE_CHECKING
    assert g.has_edge("fxlint.runtime.oracle", "fxlint")  # inside a function
    assert g.number_of_edges() > 500


def test_no_import_cycle():
    cycles = [sorted(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    assert not cycles, cycles


def test_every_module_has_a_layer():
    for name in MODULES:
        _layer(name)


def test_no_upward_import():
    upward = [f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
              for a, b in _graph().edges() if _layer(b) > _layer(a)]
    assert not upward, "\n".join(upward)


def test_data_models_do_not_import_renderers():
    """Report, AuditReport and the rewrite results print through fxlint._present's hook."""
    g = _graph()
    for model in ("fxlint.findings", "fxlint.runtime", "fxlint.rewrite.base"):
        assert not [d for d in g.successors(model) if d.startswith("fxlint.renderers")], model


def test_print_still_renders_every_data_model():
    import torch

    import fxlint

    model, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    assert str(fxlint.lint(model, (x,), config=False)).startswith("No findings")
    assert "copies" in str(fxlint.audit(model, (x,))).lower()
    assert "rewrite" in str(fxlint.rewrite(model, (x,)))


def test_one_accessor_for_a_nodes_value():
    """A node's value is read and written through fxlint.canon._fx (value_of/set_value, one precedence):
    no other module names the metadata keys."""
    import re

    pattern = re.compile(r"""["'](example_value)["']|meta(\.get\(|\[)\s*["']val["']""")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for name, p in MODULES.items() if name != "fxlint.canon._fx"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not offenders, offenders


def test_one_walk_up_a_view_chain():
    """Analyses walk up chains of views through ``CanonNode.view_chain()`` (views, or views and
    maybe-views): no module keeps its own loop over ``.input`` or its own table of view ops."""
    import re

    loop = re.compile(r"while\b.*(\.is_view\b|\.input\b)")
    table = re.compile(r"^_?VIEW\w*\s*=\s*\(")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for name, p in MODULES.items() if name != "fxlint.canon.nodes"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if loop.search(line) or table.match(line.strip())]
    assert not offenders, offenders
