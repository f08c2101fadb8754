"""Capture: load a target and its inputs, run Dynamo (or take a GraphModule / ExportedProgram), and hand the
graphs to the canonical view.
"""
