"""Tensor and layout arithmetic: sizes and strides that may be symbols, ATen's layout rules, view/reshape
feasibility, a node's tensor facts.
"""
