"""The live trait sets of the canonical ops: which ops are views, maybe views, elementwise, pass-throughs.

``canon.registry`` rewrites them on every registration; ``CanonNode`` reads them on every
``is_view``/``is_pointwise``. They live here, below both, so that the node type does not import
the registry that builds nodes.
"""

from __future__ import annotations

VIEW: frozenset[str] = frozenset()
MAYBE_VIEW: frozenset[str] = frozenset()
POINTWISE: frozenset[str] = frozenset()
PASSTHROUGH: frozenset[str] = frozenset()
