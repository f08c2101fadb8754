"""Project configuration: the [tool.fxlint] table and baselines.
"""
