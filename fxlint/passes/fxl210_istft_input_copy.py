"""A `torch.istft` spectrogram whose layout makes the inverse FFT clone it on every call.

## What it does
Reports the input of `torch.istft` when the CPU kernel copies it (see
`fxlint.kernels.spectral`, checked against the runtime). `istft` transposes
its `(N, F, T)` spectrogram to `(N, T, F)` and runs the inverse FFT over the
frequencies of every (batch, frame) pair, folding those two dims into one
with `reshape`; where they do not fold as a view, the whole spectrogram is
cloned first. That is the case for a contiguous `(N, F, T)` spectrogram with
more than one batch entry and frame - what convolutions, pads, `torch.cat`
and elementwise ops on it produce - while the layout `torch.stft` returns
(frequency innermost, strides `(F*T, 1, F)`) is read as it is.

## Why is this bad?
A full read and write of a complex spectrogram per call (8 bytes an element
in complex64), hidden in the kernel: in a source-separation model the
largest single copy of the forward pass.

## Example
```python
z = torch.stft(x, n_fft, hop, window=w, return_complex=True)
z = F.pad(z, (2, 2))                    # a contiguous (N, F, T + 4): stft's layout is lost
y = torch.istft(z, n_fft, hop, window=w)  # clones z
```

## Use instead
```python
zt = F.pad(z.transpose(1, 2), (0, 0, 2, 2))  # work on (N, T, F): the pad writes that layout
y = torch.istft(zt.transpose(1, 2), n_fft, hop, window=w)  # frequency innermost: no clone
```
Where a network produces the spectrogram, let its last layer write
`(N, T, F)` (a `Linear` over frequency) and pass `.transpose(1, 2)`.

## When it is intentional
Where the spectrogram is needed as a contiguous `(N, F, T)` tensor anyway
and the copy costs less than keeping two layouts. Silence the line with
`# fxlint: ignore[FXL210]`.

`details` (the fields of `IstftInputCopy`): those every kernel-layout rule
carries (`origin`, `shape`, `strides`, `copied`, `backward_copied`, `why`,
`reasons`, `kernel_path`, `made_at`), `contiguous` (the spectrogram is a
contiguous `(N, F, T)` tensor) and `freq_innermost` (frequency is innermost
already: a step or slice of batch or frames breaks the fold).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..registry import Hit, RuleContext, rule
from ._layout_hits import OperandCopy, kernel_input_hits

#: the kernel family this rule checks (its ops come from the kernel registry)
FAMILY = "spectral"


@dataclass(frozen=True)
class IstftInputCopy(OperandCopy):
    """A spectrogram `torch.istft` clones because its batch and frame dims do not fold."""

    contiguous: bool  # the spectrogram is a contiguous (N, F, T) tensor
    freq_innermost: bool = False  # frequency is innermost already: a subscript of batch or frames breaks the fold

    def message(self) -> str:
        return self.copy_text(f"torch.istft copies its input spectrogram {self.operand_text}")

    def fix_title(self) -> str:
        at = f" ({self.made_at})" if self.made_at else ""
        if self.freq_innermost:
            return (f"frequency is innermost already; the batch and frame strides do not nest because of how "
                    f"{self.operand_text} was cut{at} (a step or a slice of batch or frames): run istft on the "
                    "whole spectrogram and cut the signal after it, or make that piece contiguous where it is cut")
        return ("keep the spectrogram in torch.stft's layout, frequency innermost: produce it as a (N, T, F) tensor "
                f"where it is made{at} (pad, scale or mask `z.transpose(1, 2)`, or let the last layer write "
                "(N, T, F)) and pass `.transpose(1, 2)` of it to istft, which then reads it as it is")


@rule("FXL210", "istft-input-copy", "warning", violation=IstftInputCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return kernel_input_hits(view, FAMILY, lambda node, x, t, facts: IstftInputCopy(
        **facts, contiguous=bool(t is not None and t.is_contiguous() is True),
        freq_innermost=bool(t is not None and len(t.shape) >= 2 and t.stride[-2] == 1
                            and t.is_contiguous() is not True)))
