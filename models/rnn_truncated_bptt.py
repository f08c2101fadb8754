"""RNN language model whose hidden state is detached inside the time loop.

Seed scenario 6. A character-level GRU model is unrolled over the sequence
with `nn.GRUCell`; someone added `h = h.detach()` inside the loop ("to save
memory"), so backpropagation through time stops after one step: the recurrent
weights learn only from the last step's input, never from the sequence. Nothing
errors, the loss just plateaus.

fxlint follows the four GRU weights (`cell.weight_ih`, `cell.weight_hh`,
`cell.bias_ih`, `cell.bias_hh`) and the embedding to the output: of their
STEPS gradient paths (one per step), all but the last step's go through a
`detach`, so FXL301 warns on the `h = h.detach()` line with the fraction cut,
(STEPS-1)/STEPS = 92%. Autograd agrees: the weights still get a gradient, from
the last step only. If the cut were
deliberate truncated BPTT (every k steps), `# fxlint: ignore[FXL301]` on that
line says so.

Expected: FXL301 (warning) on the detach line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL301"}
STEPS = 12


class CharRNN(nn.Module):
    def __init__(self, vocab: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)                      # (time, batch, hidden)
        h = torch.zeros(x.shape[1], self.cell.hidden_size)
        for t in range(x.shape[0]):
            h = h.detach()                          # the bug: BPTT stops after one step
            h = self.cell(x[t], h)
        return self.head(h)


def make(batch: int = 8) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return CharRNN(), (torch.randint(0, 32, (STEPS, batch)),)
