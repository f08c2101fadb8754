"""Benchmarks shipped with fxlint (``fxlint bench``)."""
