"""What reading Inductor's lowering (``fxlint.compiled``) adds to Inductor's compile time.

    .venv/bin/python bench/compiled_overhead.py            # three small models, 3 compiles each way
    .venv/bin/python bench/compiled_overhead.py --real     # three real models (timm ResNet-18, ViT-Tiny,
                                                           # CaiT-XXS24 at 64 px), 2 compiles each way

Each model's Dynamo graph is captured once, then compiled with ``compile_fx`` alternately with and
without ``fxlint.compiled.observe`` (Inductor's FX-graph and AOTAutograd caches off both ways, so every
compile lowers the graph; the C++ kernels come from Inductor's code cache after the first compile, which
makes the compile shorter and the relative overhead larger). Reported per model: the median compile time
each way, the median time spent inside fxlint's reader (the hook's own work, timed directly), and that
time as a share of the compile. The backend also turns the FX-graph cache off while it watches: a user
whose compiles hit that cache pays a cold compile instead (not measured here: it depends on the cache).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fxlint.compiled import lowering  # noqa: E402


class Example(nn.Module):
    def forward(self, a, b, x):
        y = torch.matmul(a.permute(0, 2, 1, 3), b)
        z = x.t().reshape(-1) * 2
        w = x[:, [0, 2, 4, 6]] + 1
        return y, z, w


class Attention(nn.Module):
    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.qkv, self.out, self.h = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, s, d))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        return self.c2(y.permute(0, 1, 3, 2).contiguous()).mean((2, 3))


MODELS = {
    "example": (Example, lambda: (torch.randn(4, 32, 6, 16), torch.randn(4, 6, 16, 32), torch.randn(16, 16))),
    "attention": (Attention, lambda: (torch.randn(2, 32, 64),)),
    "convnet": (ConvNet, lambda: (torch.randn(2, 3, 32, 32),)),
}


def _timm(name: str, size: int = 64) -> tuple[Callable[[], nn.Module], Callable[[], tuple]]:
    def build() -> nn.Module:
        from fxlint.util.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import timm

        try:
            return timm.create_model(name, pretrained=False, num_classes=10, img_size=size)
        except TypeError:
            return timm.create_model(name, pretrained=False, num_classes=10)

    return build, lambda: (torch.randn(2, 3, size, size),)


#: real architectures (timm, random weights, no download): a conv net, a plain ViT, CaiT's class attention
REAL = {
    "resnet18": _timm("resnet18"),
    "vit_tiny": _timm("vit_tiny_patch16_224"),
    "cait_xxs24": _timm("cait_xxs24_224"),
}


def capture(model: nn.Module, args: tuple) -> tuple[torch.fx.GraphModule, list]:
    got: dict = {}

    def backend(gm, example_inputs):
        got["gm"], got["inputs"] = gm, list(example_inputs)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=backend)(*args)
    return got["gm"], got["inputs"]


def main(runs: int = 3, models: dict | None = None) -> None:
    from torch._inductor.compile_fx import compile_fx

    read_s: list[float] = []
    original = lowering._read_scheduler

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            read_s.append(time.perf_counter() - t)

    lowering._read_scheduler = timed  # type: ignore[assignment]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {runs} compiles each way")
    print(f"{'model':<10} {'plain s':>8} {'watched s':>10} {'reader ms':>10} {'reader/compile':>15}")
    with torch.no_grad():
        for name, (cls, make) in (models or MODELS).items():
            torch.manual_seed(0)
            gm, inputs = capture(cls().eval(), make())
            plain, watched, reads = [], [], []
            compile_fx(gm, inputs)  # warm the C++ code cache: later compiles measure the lowering itself
            for _ in range(runs):
                with lowering.uncached():
                    t = time.perf_counter()
                    compile_fx(gm, inputs)
                    plain.append(time.perf_counter() - t)
                    read_s.clear()
                    with lowering.observe(gm.graph) as low:
                        t = time.perf_counter()
                        compile_fx(gm, inputs)
                        watched.append(time.perf_counter() - t)
                    assert low.readable, low.why_unreadable
                    reads.append(sum(read_s))
            p, w, r = statistics.median(plain), statistics.median(watched), statistics.median(reads)
            print(f"{name:<10} {p:>8.2f} {w:>10.2f} {1e3 * r:>10.1f} {100 * r / p:>14.2f}%")


if __name__ == "__main__":
    real = "--real" in sys.argv[1:]
    main(runs=2 if real else 3, models=REAL if real else MODELS)
