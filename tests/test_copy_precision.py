"""Precision of the implicit-copy rules: standard code comes back clean at warning level.

An MLP, a contiguous CNN with a flatten head, a channels_last CNN, hand-written attention (head
split by view/transpose, `q @ k.transpose(-2, -1)`, head merge by transpose/contiguous/view),
torch's own TransformerEncoderLayer and MultiheadAttention, an LSTM tagger, positions built with
`device=`: none of them may get an FXL1xx warning. Info findings are allowed (a needed copy made
visible, a conversion that changes nothing).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10))

    def forward(self, x):
        return F.log_softmax(self.net(x), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class Attention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.pos = nn.Embedding(64, dim)

    def forward(self, x):
        B, T, C = x.shape
        x = x + self.pos(torch.arange(T, device=x.device))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (C // self.heads) ** 0.5
        y = att.softmax(-1) @ v
        return self.out(y.transpose(1, 2).contiguous().view(B, T, C))


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lstm, self.out = nn.Embedding(100, 16), nn.LSTM(16, 32, batch_first=True), nn.Linear(32, 5)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        return self.out(h)


class TorchMHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4)  # (T, B, C): callers transpose
        self.norm = nn.LayerNorm(32)

    def forward(self, x):  # x: (B, T, C)
        t = x.transpose(0, 1)
        y, _ = self.mha(t, t, t, need_weights=False)
        return self.norm(y.transpose(0, 1) + x)


CASES = [
    ("mlp", MLP, lambda: (torch.randn(8, 32),)),
    ("cnn", CNN, lambda: (torch.randn(2, 3, 16, 16),)),
    ("channels_last cnn", lambda: CNN().to(memory_format=torch.channels_last),
     lambda: (torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last),)),
    ("attention", Attention, lambda: (torch.randn(2, 10, 32),)),
    ("transformer encoder layer", lambda: nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval(),
     lambda: (torch.randn(2, 10, 32),)),
    ("torch MHA", TorchMHA, lambda: (torch.randn(2, 10, 32),)),
    ("lstm tagger", Tagger, lambda: (torch.randint(0, 100, (2, 7)),)),
]


@pytest.mark.parametrize("label,factory,inputs", CASES, ids=[c[0] for c in CASES])
def test_standard_code_is_clean_at_warning_level(label, factory, inputs):
    report = fxlint.lint(factory(), inputs(), select="FXL1")
    assert report.errors == []
    assert report.at_or_above("warning") == [], [f"{f.code} {f.location} {f.message}" for f in report.findings]
