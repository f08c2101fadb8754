"""Foundation helpers below everything else: perf guards, third-party compatibility, progress, quiet logs, state
restoring, source lines, output files.
"""
