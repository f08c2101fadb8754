"""An `nn.LSTM`/`nn.GRU`/`nn.RNN` input sequence the CPU kernel copies on every call.

## What it does
Reports the input of `nn.LSTM`, `nn.GRU` and `nn.RNN` when the CPU kernel
copies it (see `fxlint.kernels.rnn`, checked against the runtime). Both
kernels work on the time-major sequence `(T, B, C)`; with
`batch_first=True` they transpose the `(B, T, C)` input to it first, so:

* the LSTM (float32, oneDNN) makes any sequence that is not a contiguous
  `(T, B, C)` tensor contiguous - a contiguous batch-first input included;
* GRU, RNN (and an LSTM off oneDNN) copy it when time and batch cannot be
  merged into one dim (a contiguous batch-first input, a transposed one),
  once per direction.

A contiguous time-major input (`batch_first=False`) and a `PackedSequence`
are read in place.

`fxlint lint` (and `fxlint.lint`) capture the RNN call with
`torch._dynamo.config.allow_rnn` on; under
`torch.compile(model, backend="fxlint")` Dynamo breaks the graph at an RNN
module unless you set `torch._dynamo.config.allow_rnn = True` yourself (the
backend does not change what your program compiles), so this rule sees RNNs
there only then.

## Why is this bad?
A full read and write of the sequence per call, hidden in the kernel (and
per direction for a bidirectional GRU).

## Example
```python
self.rnn = nn.LSTM(c, h, batch_first=True)
y, _ = self.rnn(x)                      # x: (B, T, C) contiguous: copied to (T, B, C)
```

## Use instead
```python
self.rnn = nn.LSTM(c, h)                # batch_first=False
y, _ = self.rnn(x_tbc)                  # keep the sequence (T, B, C) end to end
```
Produce the sequence time-major where it is made (e.g. `x.permute(1, 0, 2)`
is free only if the next op takes it as it is: flatten/permute once into
`(T, B, C)` at the start of the model, not before every RNN).

## When it is intentional
A batch-first layout the rest of the model needs, where the copy costs less
than rearranging it. Silence the line with `# fxlint: ignore[FXL207]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..registry import Hit, RuleContext, rule
from ._layout_hits import OperandCopy, kernel_input_hits

#: the kernel family this rule checks (its ops come from the kernel registry)
FAMILY = "rnn"

_NAMES = {"LSTM": "nn.LSTM", "GRU": "nn.GRU", "RNN_TANH": "nn.RNN", "RNN_RELU": "nn.RNN"}


@dataclass(frozen=True)
class NoncontiguousRnn(OperandCopy):
    """An LSTM/GRU/RNN input sequence the kernel copies because of its layout."""

    mode: str  # LSTM, GRU, RNN_TANH, RNN_RELU
    batch_first: bool  # the RNN was built with batch_first=True
    input_contiguous: bool  # the input as given is contiguous (batch-first: the transpose is the cause)

    def message(self) -> str:
        name = _NAMES.get(self.mode, self.mode)
        first = " (batch_first=True)" if self.batch_first else ""
        return self.copy_text(f"{name}{first} copies its input sequence {self.operand_text}")

    def fix_title(self) -> str:
        at = f" ({self.made_at})" if self.made_at else ""
        if self.batch_first and self.input_contiguous:
            return ("keep the sequence time-major end to end: build the RNN with batch_first=False and give it a "
                    f"contiguous (T, B, C) tensor, produced in that layout where it is made{at}")
        if self.batch_first:
            return (f"produce the input as a contiguous (T, B, C) tensor where it is made{at} and build the RNN "
                    "with batch_first=False (the kernel reads a time-major contiguous sequence in place)")
        return f"produce the input as a contiguous (T, B, C) tensor where it is made{at}"


@rule("FXL207", "noncontiguous-rnn", "warning", violation=NoncontiguousRnn)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return kernel_input_hits(view, FAMILY, lambda node, x, t, facts: NoncontiguousRnn(
        **facts,
        mode=str(node.args.get("mode")),
        batch_first=bool(node.args.get("batch_first")),
        input_contiguous=bool(t is not None and t.is_contiguous() is True),
    ))
