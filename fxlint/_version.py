"""fxlint's version (one place; the package and the renderers read it)."""

__version__ = "0.1.0"
