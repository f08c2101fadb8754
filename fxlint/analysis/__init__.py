"""Analyses over the canonical view that rules share (gradient flow, index-as-slice, the device simulation) and
the rule engine.
"""
