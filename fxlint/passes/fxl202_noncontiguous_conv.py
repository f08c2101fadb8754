"""A convolution input that is neither contiguous nor channels_last-compatible: the conv copies it on every call.

## What it does
Predicts, from the input's and the weight's strides, what the convolution
kernel converts before computing (see `fxlint.kernels`, checked against the
runtime), and reports:

* **the input** (warning) when it is neither contiguous nor in the
  channels_last layout the backend takes (`clips.permute(0, 2, 1, 3, 4)`
  straight into `Conv3d`, `x.transpose(2, 3)`, a step slice). The copy is
  paid again in backward, because autograd saves the original input. 1-d
  convs copy *any* non-contiguous input (ATen makes it contiguous before
  viewing it as 2-d).
* **the weight** (info) when a channels_last input makes the conv convert a
  contiguous weight to channels_last on every call (and again in backward).
* **the input** (info) when a channels_last *weight* (a model converted with
  `model.to(memory_format=torch.channels_last)`) makes the conv convert a
  contiguous input: expected once at the model's entry.
* **the output** (info) when oneDNN computes in its own layout and copies
  the result back. That is oneDNN's choice for this CPU, not ATen's: fxlint
  measures it by running the conv once on random tensors of the same
  geometry (`fxlint lint` does by default; `--no-probe` turns it off, and
  the part is then reported as unknown in `details["unknown"]`), and says
  "measured on this machine".

## Why is this bad?
The copy is a full read and write of the activation, hidden inside the
conv, and autograd keeps the non-contiguous input alive for backward, where
it is copied again. In the video-classification seed, clips permuted from
`(B, T, C, H, W)` to `(B, C, T, H, W)` cost one clip-sized copy forward and
another backward on every step.

## Example
```python
clips = clips.permute(0, 2, 1, 3, 4)   # (B, T, C, H, W) -> (B, C, T, H, W), a strided view
out = self.conv3d(clips)               # copies clips, and again in backward
```

## Use instead
```python
# produce (B, C, T, H, W) where the clips are made (the data loader), or make
# the copy explicit once - the backward then reuses the contiguous tensor:
out = self.conv3d(clips.permute(0, 2, 1, 3, 4).contiguous())
```
For 2-d convs a permuted NHWC batch (`x.permute(0, 3, 1, 2)`) *is*
channels_last and is not copied; run the model in channels_last too
(`model.to(memory_format=torch.channels_last)`) so the weight is not
converted per call.

## When it is intentional
A one-off conv on a strided view where rearranging the producer is not
worth it. Silence the line with `# fxlint: ignore[FXL202]`.
"""

from __future__ import annotations

from typing import Iterator

from ..canon import CanonNode, GraphView
from ..findings import Severity
from ..kernels import KernelCopy, KernelPrediction, ops, predict
from ..layout import CONTIGUOUS
from ..registry import Hit, RuleContext, rule
from ..text import bytes_text, shape_text, strides_text
from ._layout import backward_clause, details, origin, total, where


#: the backward copies a hit's "again in backward" clause counts (see ``_hit``)
_BACKWARD_REASONS = ("conv-input", "conv1d-input", "conv-weight")


@rule("FXL202", "noncontiguous-conv", "warning")
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family="conv")):
        pred = predict(node)
        if pred is None:
            continue
        fwd = pred.forward()
        for operand in ("input", "weight", "output"):
            copies = [c for c in fwd if c.operand == operand]
            if copies:
                # the backward clause counts ATen's own conversions: known even where oneDNN's reorders are not
                known = pred.knows("backward", operand, reasons=_BACKWARD_REASONS)
                yield _hit(node, pred, operand, copies, pred.backward(operand) if known else None)


def _kernel_name(node: CanonNode, pred: KernelPrediction) -> str:
    return pred.kernel


def _hit(node: CanonNode, pred: KernelPrediction, operand: str, copies: list[KernelCopy],
         backward: list[KernelCopy] | None) -> Hit:
    kernel = _kernel_name(node, pred)
    x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
    xt = x.tensor if x is not None else None
    w = node.args.get("weight_info")
    nbytes = total(copies)
    why = copies[0].why
    fmt = pred.path.rsplit(", ", 1)[-1]
    severity: Severity | None = None
    if backward is not None:
        backward = [c for c in backward if c.reason in _BACKWARD_REASONS]
    if operand == "input":
        who = f"its input {origin(x, node)} {shape_text(xt)} with strides {strides_text(xt)}"
        contiguous_input = xt is not None and xt.is_contiguous() is True
        if contiguous_input and fmt != CONTIGUOUS:
            severity = Severity.INFO
            message = (f"{kernel} converts its contiguous input {origin(x, node)} {shape_text(xt)} to {fmt}: "
                       f"{bytes_text(nbytes)} per call{backward_clause(backward)}; the weight is {fmt}, so the "
                       f"conv runs in {fmt}")
            fix = (f"expected once where a {fmt} model meets an NCHW input; deeper in the network it means an op "
                   f"before this conv returned NCHW: keep the activations {fmt} (x.to(memory_format=torch.{fmt}))")
        else:
            message = (f"{kernel} copies {who}: {bytes_text(nbytes)} per call{backward_clause(backward)}; {why}")
            fix = _input_fix(node, pred, x)
    elif operand == "weight":
        severity = Severity.INFO
        message = (f"{kernel} converts its weight {shape_text(w)} to {fmt} on every call: "
                   f"{bytes_text(nbytes)}{backward_clause(backward)}; {why}")
        fix = (f"convert the model once with model.to(memory_format=torch.{fmt}) so the weight is stored {fmt}")
    else:
        severity = Severity.INFO
        message = f"{kernel} copies its output back: {bytes_text(nbytes)} per call; {why}"
        fix = ("running this conv in channels_last (input and weight) avoids the copy: "
               "model.to(memory_format=torch.channels_last) and a channels_last input")
    return Hit(node=node, message=message, fix=fix, bytes=nbytes, severity=severity,
               details=details(copies, backward, operand=operand, kernel_path=pred.path, layout=fmt,
                               dedup=f"{node.name}:{operand}",
                               unknown=[f"{u.name}: {u.why}" for u in pred.unknown],
                               measured=any(c.measured for c in copies)))


def _input_fix(node: CanonNode, pred: KernelPrediction, x: CanonNode | None) -> str:
    made = where(x, node)
    at = f" ({made})" if made else ""
    xt = x.tensor if x is not None else None
    nd = xt.ndim if xt is not None else 0
    if pred.kernel.endswith("1d"):
        groups = node.args.get("groups", 1)
        w = node.args.get("weight_info")
        one = w is not None and w.ndim == 3 and w.shape[-1] == 1 and groups == 1 and \
            all(v == 1 for v in (node.args.get("stride") or (1,))) and not node.args.get("transposed")
        hint = (" A kernel_size-1 Conv1d on (N, L, C) features is an nn.Linear over C: apply the Linear to the "
                "(N, L, C) tensor directly." if one else "")
        return (f"conv1d takes only contiguous (N, C, L) input: produce it in that layout where it is "
                f"created{at}, or make the copy explicit once with .contiguous() there (the backward then reuses "
                f"it).{hint}")
    if nd == 5:
        return (f"feed the Conv3d (B, C, T, H, W)-contiguous or channels_last_3d input: produce it in that layout "
                f"where it is created{at}, or make the copy explicit once with .contiguous() there (the backward "
                "then reuses it instead of copying again)")
    return (f"give the conv a contiguous (N, C, H, W) or channels_last input: produce it in that layout where it is "
            f"created{at}, or make the copy explicit once with .contiguous() there (the backward then reuses it)")
