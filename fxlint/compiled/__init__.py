"""Verdicts for the program ``torch.compile`` really runs: which of the eager copies Inductor keeps.

fxlint's copy findings are eager-mode facts: what ATen copies running the graph op by op. Inductor
fuses layout ops into the kernels that read them, so some of those copies do not exist in the
compiled program, and it makes copies of its own (an extern kernel's input made contiguous). This
package reads Inductor's own lowering of a captured graph and never guesses:

* ``fxlint.compiled.lowering`` compiles (or watches the compile of) one Dynamo graph with Inductor,
  reading the scheduler's nodes as they are code-generated: every buffer Inductor materialises,
  whether it is a copy (a generated kernel that only moves data, or one whose origins are only
  layout/copy ops), its bytes, and the Dynamo nodes it comes from (``node.meta["from_node"]``);
* ``fxlint.compiled.verdicts`` turns that into a verdict on each copy finding of the graph:
  ``survives`` (with the bytes per call of the compiled program), ``fused`` (no memory traffic of
  its own) or ``unknown`` (the lowering could not be read, or does not say).

What it relies on in Inductor is listed in docs/how-it-works.md ("Verdicts for the compiled
program").
"""

from __future__ import annotations

from .lowering import CompiledBuffer, Lowering, compile_and_read, observe
from .verdicts import FUSED, SURVIVES, UNKNOWN, Sites, apply_verdicts, unknown_verdicts

__all__ = ["FUSED", "SURVIVES", "UNKNOWN", "CompiledBuffer", "Lowering", "Sites", "apply_verdicts", "compile_and_read",
           "observe", "unknown_verdicts"]
