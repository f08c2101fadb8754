"""The kernel stride model against the runtime: case grids and the comparison.

Each case builds leaf tensors with exactly the strides under test
(``torch.empty_strided``: permutations, transposes, step slices, padded
rows, expanded stride-0 dims, channels_last), calls one kernel, and
compares the copies ``fxlint.kernels`` predicts (forward, and backward when
the case trains) with the copies the profiler records for that call
(``fxlint.runtime.profiler.profile_copies``, the audit's engine). The
gradient fed to backward has the output's own layout (``ones_like``).
Gradient accumulation into the leaves and one-element copies (Python
scalars wrapped into tensors) are not the kernel's and are left out.

``grid(family)`` lists every case of a family; the test suite runs a fixed,
seeded sample of it; ``FXLINT_SWEEP=full`` runs all of it.
"""

from __future__ import annotations

import collections
import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F

from fxlint import kernels as K
import fxlint.kernels.probe  # noqa: F401 - K.probe
from fxlint.kernels.probe import record_copies
from fxlint.tensor.info import TensorInfo

TI = TensorInfo.from_tensor


def strides_for(shape, order=None, step=None, pad=None, zero=()) -> tuple[int, ...]:
    """Strides of a tensor stored with dims in ``order`` (outermost first), with a step slice
    on the dims in ``step``, padded rows on the dims in ``pad``, and stride 0 on ``zero``."""
    n = len(shape)
    order = list(order) if order is not None else list(range(n))
    step, pad = step or {}, pad or {}
    st = [0] * n
    cur = 1
    for d in reversed(order):
        if d in zero:
            continue
        k = step.get(d, 1)
        st[d] = cur * k
        cur = cur * (shape[d] * k + pad.get(d, 0))
    return tuple(st)


def leaf(shape, stride, dtype=torch.float32, requires_grad=False) -> torch.Tensor:
    t = torch.empty_strided(shape, stride, dtype=dtype)
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    with torch.no_grad():
        flat.normal_()
    return t.requires_grad_(requires_grad)


@dataclass
class Case:
    name: str
    build: Callable[[], tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...], bool, Callable[..., Any]]]


@dataclass
class Outcome:
    name: str
    status: str  # ok | mismatch | unknown
    runtime: list[tuple[str, int, str]]
    predicted: list[tuple[str, int, str]]
    path: str = ""
    partial: bool = False  # the prediction left some part unknown (``KernelPrediction.unknown``)
    unknown: tuple[str, ...] = ()  # the names of those parts
    why: str = ""  # what disagrees, for a mismatch
    measured: bool = False  # the probe answered some parts (run_case(probe=True))


def runtime_copies(fn: Callable[..., torch.Tensor], args: tuple,
                   train: bool) -> tuple[list[tuple[str, int, str, tuple[int, ...]]], tuple[int, ...]]:
    """(phase, bytes, op, shape) of every copy one call (and its backward, when training) makes,
    read as the probe reads it (``fxlint.kernels.probe.record_copies``), and the output's shape."""
    def step() -> None:
        out = fn(*args)
        if train:
            out.backward(torch.ones_like(out))

    step()  # warm-up
    for a in args:
        if isinstance(a, torch.Tensor):
            a.grad = None
    events = record_copies(step)
    for a in args:
        if isinstance(a, torch.Tensor):
            a.grad = None
    with torch.no_grad():
        out = fn(*args)
    return [(c.phase, c.bytes, c.op, tuple(c.shape)) for c in events], tuple(out.shape)


def run_case(case: Case, probe: bool = False) -> Outcome:
    """Compare the prediction with the runtime. Every copy the model claims must happen, and every
    copy that happens must be claimed - or lie in a part the prediction says it does not know
    (same phase, an operand of its shape). ``probe``: resolve the machine-dependent parts on this
    machine first (``fxlint.kernels.probe``); the answer must then be exact."""
    fn, args, train, predictor = case.build()
    pred = predictor(*args)
    rt, out_shape = runtime_copies(fn, args, train)
    rt3 = [r[:3] for r in rt]
    if pred is None:
        return Outcome(case.name, "unknown", rt3, [])
    if probe:
        with K.probe.probing():
            pred = K.probe.resolve(pred)
    itemsize = args[0].element_size()
    pr, claimed = [], []
    for c in pred.copies:
        if int(c.each) <= itemsize:
            continue  # copies of one element are not counted at runtime either
        pr.extend([(c.phase, int(c.each), c.op)] * c.count)
        if pred.knows(c.phase, c.operand, [c.reason]):  # a copy listed inside an unknown part is no claim
            claimed.extend([(c.phase, int(c.each))] * c.count)
    a = collections.Counter((r[0], r[1]) for r in rt)
    b = collections.Counter(claimed)
    names = {o.name: o.shape for o in pred.probe.operands} if pred.probe is not None else {}
    names["output"] = out_shape
    why = []
    if b - a:
        why.append(f"predicted but not made: {sorted((b - a).elements())}")
    extra = a - b
    for phase, nbytes, op, shape in rt:
        if extra[(phase, nbytes)] <= 0:
            continue
        extra[(phase, nbytes)] -= 1
        owners = K.probe.attribute(shape, names) or ("?",)  # "?": only a part of every operand covers it
        if not any(pred.knows(phase, o) is False for o in owners):
            why.append(f"made but not predicted: {phase} {nbytes} B {op} {shape}")
    partial = bool(pred.unknown)
    return Outcome(case.name, "mismatch" if why else "ok", rt3, pr, pred.path, partial,
                   tuple(u.name for u in pred.unknown), "; ".join(why), probe and pred.probe is not None)


# --------------------------------------------------------------------------- grids

ENV = None


def env() -> K.Env:
    global ENV
    if ENV is None:
        ENV = K.Env.current()
    return ENV


def _lay2(shape):
    yield "c", strides_for(shape)
    yield "t", strides_for(shape, order=[1, 0])
    yield "rowstep", strides_for(shape, step={0: 2})
    yield "colstep", strides_for(shape, step={1: 2})
    yield "pad", strides_for(shape, pad={1: 3})
    yield "tpad", strides_for(shape, order=[1, 0], pad={0: 3})
    yield "exp0", strides_for(shape, zero=(0,))
    yield "exp1", strides_for(shape, zero=(1,))


def _lay3(shape):
    yield "c", strides_for(shape)
    yield "mT", strides_for(shape, order=[0, 2, 1])
    yield "b-mid", strides_for(shape, order=[1, 0, 2])
    yield "b-last", strides_for(shape, order=[1, 2, 0])
    yield "step", strides_for(shape, step={2: 2})
    yield "pad", strides_for(shape, pad={2: 3})
    yield "bexp", strides_for(shape, zero=(0,))
    yield "bstep", strides_for(shape, step={0: 2})


def _lay4(shape):
    yield "c", strides_for(shape)
    yield "p0213", strides_for(shape, order=[0, 2, 1, 3])
    yield "p0231", strides_for(shape, order=[0, 2, 3, 1])
    yield "p1023", strides_for(shape, order=[1, 0, 2, 3])
    yield "mT", strides_for(shape, order=[0, 1, 3, 2])
    yield "step", strides_for(shape, step={3: 2})
    yield "exp0", strides_for(shape, zero=(0,))


DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _matrix_cases() -> Iterator[Case]:
    for dt in DTYPES:
        for (M, Kd, N) in [(16, 8, 12), (1, 8, 12), (16, 8, 1), (4, 3, 5), (40, 40, 40)]:
            for (na, sa), (nb, sb), rg in itertools.product(_lay2((M, Kd)), _lay2((Kd, N)), (False, True)):
                tag = f"{dt} {(M, Kd, N)} {na} {nb} rg={rg}"

                def mm(sa=sa, sb=sb, dt=dt, rg=rg, M=M, Kd=Kd, N=N):
                    a, b = leaf((M, Kd), sa, dt, rg), leaf((Kd, N), sb, dt, rg)
                    return torch.mm, (a, b), rg, lambda a, b: K.predict_mm(TI(a), TI(b), grad=rg, env=env())

                yield Case("mm " + tag, mm)
                if rg:
                    continue

                def addmm(sa=sa, sb=sb, dt=dt, M=M, Kd=Kd, N=N):
                    a, b, bias = leaf((M, Kd), sa, dt), leaf((Kd, N), sb, dt), leaf((N,), (1,), dt)
                    return (lambda a, b, bias: torch.addmm(bias, a, b)), (a, b, bias), False, \
                        (lambda a, b, bias: K.predict_addmm(TI(bias), TI(a), TI(b), env=env()))

                def linear(sa=sa, sb=sb, dt=dt, M=M, Kd=Kd, N=N, hb=True):
                    a, w, bias = leaf((M, Kd), sa, dt), leaf((Kd, N), sb, dt).t(), leaf((N,), (1,), dt)
                    return (lambda a, w, bias: F.linear(a, w, bias if hb else None)), (a, w, bias), False, \
                        (lambda a, w, bias: K.predict_linear(TI(a), TI(w), TI(bias) if hb else None, env=env()))

                yield Case("addmm " + tag, addmm)
                yield Case("linear+bias " + tag, linear)
                yield Case("linear " + tag, lambda f=linear: f(hb=False))
            for (na, sa), vs in itertools.product(_lay2((M, Kd)), (1, 2)):
                def mv(sa=sa, vs=vs, dt=dt, M=M, Kd=Kd):
                    a, v = leaf((M, Kd), sa, dt), leaf((Kd,), (vs,), dt)
                    return torch.mv, (a, v), False, lambda a, v: K.predict_mv(TI(a), TI(v), env=env())

                yield Case(f"mv {dt} {(M, Kd)} {na} vstep={vs}", mv)


def _bmm_cases() -> Iterator[Case]:
    for dt in DTYPES:
        for (B, M, Kd, N) in [(4, 4, 4, 4), (3, 16, 8, 12), (1, 16, 8, 12), (4, 32, 32, 32), (2, 10, 10, 10)]:
            for (na, sa), (nb, sb) in itertools.product(_lay3((B, M, Kd)), _lay3((B, Kd, N))):
                def bmm(sa=sa, sb=sb, dt=dt, B=B, M=M, Kd=Kd, N=N):
                    a, b = leaf((B, M, Kd), sa, dt), leaf((B, Kd, N), sb, dt)
                    return torch.bmm, (a, b), False, lambda a, b: K.predict_bmm(TI(a), TI(b), env=env())

                def baddbmm(sa=sa, sb=sb, dt=dt, B=B, M=M, Kd=Kd, N=N):
                    a, b, c = leaf((B, M, Kd), sa, dt), leaf((B, Kd, N), sb, dt), leaf((B, M, N), strides_for((B, M, N)), dt)
                    return (lambda a, b, c: torch.baddbmm(c, a, b)), (a, b, c), False, \
                        (lambda a, b, c: K.predict_bmm(TI(a), TI(b), bias=TI(c), baddbmm=True, env=env()))

                yield Case(f"bmm {dt} {(B, M, Kd, N)} {na} {nb}", bmm)
                yield Case(f"baddbmm {dt} {(B, M, Kd, N)} {na} {nb}", baddbmm)


def _matmul_cases() -> Iterator[Case]:
    for dt in DTYPES:  # float16 too: oneDNN takes it only where the CPU has AVX512-FP16 or AMX-FP16
        for (B, H, S, D) in [(2, 3, 8, 4), (1, 3, 8, 4), (2, 1, 8, 4), (2, 4, 16, 16)]:
            for (na, sa), (nb, sb), rg in itertools.product(_lay4((B, H, S, D)), _lay4((B, H, D, S)), (False, True)):
                def mm4(sa=sa, sb=sb, dt=dt, rg=rg, s=(B, H, S, D)):
                    a, b = leaf(s, sa, dt, rg), leaf((s[0], s[1], s[3], s[2]), sb, dt, rg)
                    return torch.matmul, (a, b), rg, lambda a, b: K.predict_matmul(TI(a), TI(b), grad=rg, env=env())

                yield Case(f"matmul4x4 {dt} {(B, H, S, D)} {na} {nb} rg={rg}", mm4)
            for (na, sa), rgw, wshape in itertools.product(
                    _lay4((B, H, S, D)), (False, True), [(D, 5), (H, D, 5), (1, H, D, 5), (B, 1, D, 5), (D,)]):
                def mmw(sa=sa, dt=dt, rgw=rgw, wshape=wshape, s=(B, H, S, D)):
                    a, w = leaf(s, sa, dt, rgw), leaf(wshape, strides_for(wshape), dt, rgw)
                    return torch.matmul, (a, w), rgw, lambda a, w: K.predict_matmul(TI(a), TI(w), grad=rgw, env=env())

                yield Case(f"matmul4x{len(wshape)} {dt} {(B, H, S, D)} {na} w{wshape} rg={rgw}", mmw)
                if len(wshape) == 2:
                    def mm2x4(sa=sa, dt=dt, rgw=rgw, wshape=wshape, s=(B, H, S, D)):
                        a, w = leaf(s, sa, dt), leaf((wshape[1], wshape[0]), strides_for((wshape[1], wshape[0])), dt, rgw)
                        return (lambda w, a: w @ a.mT), (w, a), False, \
                            (lambda w, a: K.predict_matmul(TI(w), TI(a.mT), env=env()))

                    yield Case(f"matmul2x4 {dt} {(B, H, S, D)} w{wshape} @ {na}.mT rg={rgw}", mm2x4)
            for (na, sa), rgw, hb in itertools.product(_lay3((B, S, D)), (False, True), (False, True)):
                def lin3(sa=sa, dt=dt, rgw=rgw, hb=hb, s=(B, S, D)):
                    x, w, b = leaf(s, sa, dt), leaf((6, s[2]), strides_for((6, s[2])), dt, rgw), leaf((6,), (1,), dt, rgw)
                    return (lambda x, w, b: F.linear(x, w, b if hb else None)), (x, w, b), rgw, \
                        (lambda x, w, b: K.predict_linear(TI(x), TI(w), TI(b) if hb else None, grad=rgw, env=env()))

                yield Case(f"linear3d {dt} {(B, S, D)} {na} rg={rgw} bias={hb}", lin3)
            for (na, sa), hb in itertools.product(_lay4((B, H, S, D)), (False, True)):
                def lin4(sa=sa, dt=dt, hb=hb, s=(B, H, S, D)):
                    x, w, b = leaf(s, sa, dt), leaf((6, s[3]), strides_for((6, s[3])), dt, True), leaf((6,), (1,), dt, True)
                    return (lambda x, w, b: F.linear(x, w, b if hb else None)), (x, w, b), False, \
                        (lambda x, w, b: K.predict_linear(TI(x), TI(w), TI(b) if hb else None, env=env()))

                yield Case(f"linear4d {dt} {(B, H, S, D)} {na} bias={hb}", lin4)


def _conv_layouts(shape):
    nd = len(shape)
    yield "c", strides_for(shape)
    if nd == 4:
        yield "cl", strides_for(shape, order=[0, 2, 3, 1])
        yield "t23", strides_for(shape, order=[0, 1, 3, 2])
        yield "cl-pad", strides_for(shape, order=[0, 2, 3, 1], pad={1: 2})
        yield "c-step", strides_for(shape, step={3: 2})
        yield "p1023", strides_for(shape, order=[1, 0, 2, 3])
    if nd == 5:
        yield "cl3d", strides_for(shape, order=[0, 2, 3, 4, 1])
        yield "p02134", strides_for(shape, order=[0, 2, 1, 3, 4])
        yield "cl3d-step", strides_for(shape, order=[0, 2, 3, 4, 1], step={1: 2})
    if nd == 3:
        yield "t12", strides_for(shape, order=[0, 2, 1])
        yield "step", strides_for(shape, step={2: 2})
        yield "p102", strides_for(shape, order=[1, 0, 2])


def _conv_cases() -> Iterator[Case]:
    for dt, nd in itertools.product(DTYPES, (3, 4, 5)):
        sp = nd - 2
        for N, C, O, k, grp, tr, strd, dil, bias, train in itertools.product(
                (1, 2), (3, 4), (4, 8), (1, 3), (1, "dw"), (False, True), (1, 2), (1, 2), (False, True), (False, True)):
            if (grp == "dw" and tr) or (dil == 2 and (tr or strd == 2)) or (tr and strd == 2 and k == 1):
                continue
            g = C if grp == "dw" else 1
            Oc = C * (O // 4) if grp == "dw" else O
            size = {3: (10,), 4: (7, 7), 5: (5, 5, 5)}[nd]
            shape = (N, C) + size
            wshape = (C, Oc // g) + (k,) * sp if tr else (Oc, C // g) + (k,) * sp
            for wl in ("c", "cl"):
                if wl == "cl" and nd == 3:
                    continue
                wst = strides_for(wshape) if wl == "c" else strides_for(wshape, order=[0] + list(range(2, nd)) + [1])
                for ln, lst in _conv_layouts(shape):
                    def conv(dt=dt, nd=nd, sp=sp, g=g, tr=tr, strd=strd, dil=dil, bias=bias, train=train,
                             shape=shape, lst=lst, wshape=wshape, wst=wst, Oc=Oc):
                        x, w = leaf(shape, lst, dt, train), leaf(wshape, wst, dt, train)
                        b = leaf((Oc,), (1,), dt, train) if bias else None
                        if tr:
                            fn = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[nd]
                            call = lambda x, w: fn(x, w, b, stride=strd, groups=g)  # noqa: E731
                        else:
                            fn = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[nd]
                            call = lambda x, w: fn(x, w, b, stride=strd, dilation=dil, groups=g)  # noqa: E731

                        def predictor(x, w):
                            with torch.no_grad():
                                out = call(x, w)
                            return K.predict_conv(TI(x), TI(w), output=TI(out), has_bias=bias, transposed=tr, groups=g,
                                                  stride=(strd,) * sp, dilation=(dil,) * sp,
                                                  output_padding=(0,) * sp, grad=train, env=env())

                        return call, (x, w), train, predictor

                    yield Case(f"conv{sp}d {dt} N={N} C={C} O={Oc} k={k} g={g} tr={tr} s={strd} d={dil} bias={bias} "
                               f"train={train} x={ln} w={wl}", conv)


def _norm_layouts(shape):
    nd = len(shape)
    yield "c", strides_for(shape)
    yield "rev", strides_for(shape, order=list(reversed(range(nd))))
    yield "swap01", strides_for(shape, order=[1, 0] + list(range(2, nd)))
    yield "laststep", strides_for(shape, step={nd - 1: 2})
    yield "lastpad", strides_for(shape, pad={nd - 1: 3})
    yield "exp1", strides_for(shape, zero=(1,))
    if nd == 4:
        yield "cl", strides_for(shape, order=[0, 2, 3, 1])
        yield "cl-step", strides_for(shape, order=[0, 2, 3, 1], step={1: 2})
    if nd == 5:
        yield "cl3d", strides_for(shape, order=[0, 2, 3, 4, 1])


def _norm_cases() -> Iterator[Case]:
    for dt, shape in itertools.product(DTYPES, [(2, 8, 6), (4, 6, 5, 8), (2, 6, 3, 4, 5), (1, 6, 5, 8)]):
        C, last = shape[1], shape[-1]
        for (ln, st), train in itertools.product(_norm_layouts(shape), (False, True)):
            tag = f"{dt} {shape} {ln} train={train}"

            def mk(kind, call, extra=(), dt=dt, st=st, train=train, shape=shape, **kw):
                def build():
                    x = leaf(shape, st, dt, train)
                    params = tuple(leaf(p, (1,), dt, train) for p in extra)
                    return call, (x,) + params, train, lambda x, *p: K.predict_norm(kind, TI(x), grad=train, env=env(), **kw)
                return build

            yield Case("layer_norm " + tag, mk("layer_norm", lambda x, w, b, last=last: F.layer_norm(x, (last,), w, b), ((last,), (last,))))
            yield Case("rms_norm " + tag, mk("rms_norm", lambda x, w, last=last: F.rms_norm(x, (last,), w), ((last,),)))
            yield Case("instance_norm " + tag, mk("instance_norm", lambda x: F.instance_norm(x)))
            if C % 2 == 0:
                yield Case("group_norm " + tag, mk("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), ((C,), (C,))))
            for bn_train in (False, True):
                def bn(x, w, b, bn_train=bn_train, dt=dt, C=C):
                    return F.batch_norm(x, torch.zeros(C, dtype=dt), torch.ones(C, dtype=dt), w, b, training=bn_train)

                yield Case(f"batch_norm bn_train={bn_train} " + tag, mk("batch_norm", bn, ((C,), (C,)), training=bn_train))

            def sm(kind, dim, dt=dt, st=st, train=train, shape=shape):
                def build():
                    x = leaf(shape, st, dt, train)
                    fn = (lambda x: torch.softmax(x, dim)) if kind == "softmax" else (lambda x: F.log_softmax(x, dim))
                    return fn, (x,), train, lambda x: K.predict_softmax(TI(x), kind=kind, env=env())
                return build

            yield Case("softmax(-1) " + tag, sm("softmax", -1))
            yield Case("softmax(1) " + tag, sm("softmax", 1))
            yield Case("log_softmax(-1) " + tag, sm("log_softmax", -1))


def _pad_cases() -> Iterator[Case]:
    pads = [(0, 0), (0, 0, 0, 0), (0, 0, 0, 0, 0, 0), (1, 1), (0, 1, 2, 0), (0, 0, 0, 1, 0, 2), (-1, 0), (-1, 1),
            (0, -2, 0, 0)]
    for dt, shape in itertools.product((torch.float32, torch.bfloat16), [(2, 8, 6), (2, 6, 5, 8), (1, 6, 5, 8)]):
        for (ln, st), pad, train in itertools.product(_norm_layouts(shape), pads, (False, True)):
            if len(pad) // 2 > len(shape):
                continue

            def build(dt=dt, st=st, pad=pad, train=train, shape=shape):
                x = leaf(shape, st, dt, train)
                return (lambda x: F.pad(x, pad)), (x,), train, \
                    (lambda x: K.predict_pad(TI(x), pad, grad=train, env=env()))

            yield Case(f"pad {dt} {shape} {ln} {pad} train={train}", build)
    # reflect and replicate pads: their own kernels, which copy an input not dense in its memory format
    for dt, (shape, pad), mode in itertools.product(
            (torch.float32, torch.bfloat16), [((2, 8, 6), (1, 2)), ((2, 6, 5, 8), (1, 1, 2, 0)),
                                              ((2, 4, 3, 5, 6), (1, 1, 1, 1, 1, 1))], ("reflect", "replicate")):
        for (ln, st) in _norm_layouts(shape):

            def build_m(dt=dt, st=st, pad=pad, shape=shape, mode=mode):
                x = leaf(shape, st, dt, False)
                return (lambda x: F.pad(x, pad, mode=mode)), (x,), False, \
                    (lambda x: K.predict_pad(TI(x), pad, mode=mode, env=env()))

            yield Case(f"pad {mode} {dt} {shape} {ln} {pad}", build_m)


def _qkv_layouts(B, H, L, E):
    """(name, shape, strides) of q/k/v layouts attention code produces."""
    yield "c", (B, H, L, E), strides_for((B, H, L, E))
    yield "qkv", (B, H, L, E), (L * 3 * H * E, E, 3 * H * E, 1)  # qkv.reshape(B, L, 3, H, E).permute(2, 0, 3, 1, 4)[i]
    yield "t12", (B, H, L, E), strides_for((B, H, L, E), order=[0, 2, 1, 3])
    yield "lastT", (B, H, L, E), strides_for((B, H, L, E), order=[0, 1, 3, 2])
    yield "5d", (B, 2, H, L, E), (3 * 2 * H * L * E, H * L * E, L * E, E, 1)
    yield "3d", (B * H, L, E), strides_for((B * H, L, E), order=[1, 0, 2])


def _sdpa_cases() -> Iterator[Case]:
    B, H, L, E = 2, 4, 16, 8
    masks = [None, (L, L), (1, H, L, L), (H, L, L), (B, 1, L, L)]
    for dt, (ln, shape, st), mask, train, dropout in itertools.product(
            (torch.float32, torch.bfloat16), _qkv_layouts(B, H, L, E), masks, (False, True), (0.0,)):
        if mask is not None and len(shape) == 3 and len(mask) > 2:
            continue
        if dt != torch.float32 and (ln in ("lastT", "5d", "3d") or (mask is not None and len(mask) == 3)):
            continue  # reduced precision on the math path converts to float32 first: not modelled

        def build(dt=dt, shape=shape, st=st, mask=mask, train=train):
            q, k, v = (leaf(shape, st, dt, train) for _ in range(3))
            m = leaf(mask, strides_for(mask), dt) if mask is not None else None
            return (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m)), (q, k, v), train, \
                (lambda q, k, v: K.predict_sdpa(TI(q), TI(k), TI(v), TI(m) if m is not None else None, grad=train,
                                                env=env()))

        yield Case(f"sdpa {dt} {ln} {shape} mask={mask} train={train}", build)


#: einsum equations of the zoos (torchvision maxvit/mvit, timm mvitv2/maxxvit rel-pos) with operand sizes
_EINSUMS = [
    ("B G H I D, B G H J D -> B G H I J", {"B": 2, "G": 3, "H": 2, "I": 5, "J": 5, "D": 4}),
    ("B G H I J, B G H J D -> B G H I D", {"B": 2, "G": 3, "H": 2, "I": 5, "J": 5, "D": 4}),
    ("bythwc,hkc->bythwk", {"b": 2, "y": 2, "t": 1, "h": 3, "w": 3, "c": 4, "k": 3}),
    ("byhwc,hkc->byhwk", {"b": 2, "y": 2, "h": 3, "w": 4, "c": 5, "k": 3}),
    ("nixw,jyw->nijxy", {"n": 2, "i": 3, "x": 4, "w": 5, "j": 3, "y": 4}),
    ("nhw,ixh->nixw", {"n": 2, "h": 5, "w": 4, "i": 3, "x": 4}),
    ("bhid,bhjd->bhij", {"b": 2, "h": 3, "i": 6, "j": 7, "d": 4}),
    ("bij,bjk->bik", {"b": 3, "i": 4, "j": 5, "k": 6}),
]


#: einsum equations off the bmm path, with each operand's shape (a label may be 1 in one operand: it
#: broadcasts): no summed index (``a.mul(b)``), a contracted dim of size 1 in both (squeezed, then a
#: mul), a broadcast batch dim, every index summed (``flatten().dot()``)
EINSUM_SHAPED = [
    ("blq,bhlk->bhlqk", (2, 7, 4), (2, 3, 7, 8)),
    ("bhi,bhj->bhij", (2, 3, 5), (2, 3, 4)),
    ("bij,bjk->bik", (3, 4, 1), (3, 1, 6)),
    ("bij,bjk->bik", (3, 4, 5), (1, 5, 6)),
    ("bhid,bjd->bhij", (2, 3, 5, 4), (2, 6, 4)),
    ("ij,ij->", (4, 5), (4, 5)),
    ("bij,bji->", (2, 4, 5), (2, 5, 4)),
]


def einsum_case(eqn, sa, sb, oa=None, ob=None, na="c", nb="c", train=False, dt=torch.float32) -> Case:
    def build():
        a, b = leaf(sa, strides_for(sa, order=oa), dt, train), leaf(sb, strides_for(sb, order=ob), dt, train)
        return (lambda a, b: torch.einsum(eqn, a, b)), (a, b), train, \
            (lambda a, b: K.predict_einsum(eqn, TI(a), TI(b), grad=train, env=env()))

    return Case(f"einsum {eqn!r} {sa}x{sb} {dt} a={na} b={nb} train={train}", build)


def einsum_shaped_cases(train: tuple[bool, ...] = (False, True)) -> Iterator[Case]:
    for eqn, sa, sb in EINSUM_SHAPED:
        for (na, oa), (nb, ob), tr in itertools.product(_einsum_layouts(len(sa)), _einsum_layouts(len(sb)), train):
            yield einsum_case(eqn, sa, sb, oa, ob, na, nb, tr)


def _einsum_layouts(n):
    yield "c", None
    yield "rev", list(reversed(range(n)))
    yield "swap01", [1, 0] + list(range(2, n))
    if n >= 3:
        yield "swap12", [0, 2, 1] + list(range(3, n))
        yield "lastfirst", [n - 1] + list(range(n - 1))


def _einsum_cases() -> Iterator[Case]:
    for dt, (eqn, sizes) in itertools.product((torch.float32,), _EINSUMS):
        lhs = eqn.replace(" ", "").split("->")[0].split(",")
        sa, sb = (tuple(sizes[c] for c in part) for part in lhs)
        for (na, oa), (nb, ob), train in itertools.product(_einsum_layouts(len(sa)), _einsum_layouts(len(sb)),
                                                           (False, True)):
            def build(dt=dt, eqn=eqn, sa=sa, sb=sb, oa=oa, ob=ob, train=train):
                a, b = leaf(sa, strides_for(sa, order=oa), dt, train), leaf(sb, strides_for(sb, order=ob), dt, train)
                return (lambda a, b: torch.einsum(eqn, a, b)), (a, b), train, \
                    (lambda a, b: K.predict_einsum(eqn, TI(a), TI(b), grad=train, env=env()))

            yield Case(f"einsum {eqn!r} {dt} a={na} b={nb} train={train}", build)
    yield from einsum_shaped_cases()


def _spatial_layouts(shape):
    yield "c", strides_for(shape)
    yield "cl", strides_for(shape, order=[0, 2, 3, 1])
    yield "chslice", strides_for(shape, pad={1: 3})  # x[:, :C] of a (N, C + 3, H, W) batch
    yield "t23", strides_for(shape, order=[0, 1, 3, 2])
    yield "step", strides_for(shape, step={3: 2})
    yield "cl-chslice", strides_for(shape, order=[0, 2, 3, 1], pad={1: 3})


def _spatial_cases() -> Iterator[Case]:
    calls = {
        "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), {}),
        "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1), {}),
        "adaptive_avg_pool2d(3)": (lambda x: F.adaptive_avg_pool2d(x, 3), {"output_size": 3}),
        "adaptive_avg_pool2d(1)": (lambda x: F.adaptive_avg_pool2d(x, 1), {"output_size": 1}),
        "upsample bilinear": (lambda x: F.interpolate(x, size=(9, 11), mode="bilinear"), {"mode": "bilinear"}),
        "upsample nearest": (lambda x: F.interpolate(x, scale_factor=2), {"mode": "nearest"}),
        "upsample bicubic": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), {"mode": "bicubic"}),
        "im2col": (lambda x: F.unfold(x, 3, padding=1), {}),
    }
    combos = [(dt, shape, name, fn, kw, ln, st)
              for dt, shape, (name, (fn, kw)) in itertools.product(
                  (torch.float32, torch.bfloat16), [(2, 4, 6, 6), (1, 3, 5, 7)], calls.items())
              # a global average in reduced precision is a float32 mean: the input is converted, not modelled
              if not (dt != torch.float32 and name == "adaptive_avg_pool2d(1)")
              for ln, st in _spatial_layouts(shape)]
    for dt, shape, name, fn, kw, ln, st in combos:
        kind = name.split(" ")[0].split("(")[0]

        def build(dt=dt, shape=shape, st=st, fn=fn, kw=kw, kind=kind):
            x = leaf(shape, st, dt)

            def predictor(x):
                with torch.no_grad():
                    out = fn(x)
                return K.predict_spatial(kind, TI(x), output=TI(out), env=env(), **kw)

            return fn, (x,), False, predictor

        yield Case(f"{name} {dt} {shape} {ln}", build)


def _rnn_layouts(shape):
    yield "c", strides_for(shape)
    yield "t01", strides_for(shape, order=[1, 0, 2])  # x.transpose(0, 1) of a contiguous tensor
    yield "chslice", strides_for(shape, pad={2: 3})  # x[..., :C] of a (.., .., C + 3) tensor
    yield "step0", strides_for(shape, step={0: 2})  # x[::2]


def _rnn_cases() -> Iterator[Case]:
    """nn.LSTM/GRU/RNN without biases (a biased one adds the Linear's bias copies, which are not the input's),
    inference: the input sequence's copies only."""
    import torch.nn as nn

    from fxlint.kernels.rnn import predict_rnn

    kinds = {"LSTM": (nn.LSTM, {}), "LSTM proj": (nn.LSTM, {"proj_size": 3}), "GRU": (nn.GRU, {}),
             "GRU bidir": (nn.GRU, {"bidirectional": True}), "RNN_TANH": (nn.RNN, {})}
    for dt, shape, (name, (cls, kw)), bf in itertools.product(
            (torch.float32, torch.bfloat16), [(4, 5, 6), (1, 5, 6), (5, 1, 6)], kinds.items(), (False, True)):
        mode = name.split(" ")[0]
        for ln, st in _rnn_layouts(shape):

            def build(dt=dt, shape=shape, st=st, cls=cls, kw=kw, bf=bf, mode=mode):
                m = cls(shape[2], 4, bias=False, batch_first=bf, **kw).to(dt).eval()
                x = leaf(shape, st, dt)

                def fn(x):
                    with torch.no_grad():
                        return m(x)[0]

                def predictor(x):
                    return predict_rnn(mode, TI(x), batch_first=bf, bidirectional=bool(kw.get("bidirectional")),
                                       proj=bool(kw.get("proj_size")))

                return fn, (x,), False, predictor

            yield Case(f"rnn {name} batch_first={bf} {dt} {shape} {ln}", build)


def _spectral_layouts(N, F, T):
    """(name, shape, strides) of complex spectrograms: as convs and pads make them, as torch.stft returns them,
    permuted, sliced and stepped; a 2-D one."""
    yield "c", (N, F, T), strides_for((N, F, T))
    yield "stft", (N, F, T), strides_for((N, F, T), order=[0, 2, 1])
    yield "tnf", (N, F, T), strides_for((N, F, T), order=[2, 0, 1])
    yield "ftn", (N, F, T), strides_for((N, F, T), order=[1, 2, 0])
    yield "slice-t", (N, F, T), strides_for((N, F, T), pad={2: 3})
    yield "stft-slice-f", (N, F, T), strides_for((N, F, T), order=[0, 2, 1], pad={1: 2})
    yield "step-t", (N, F, T), strides_for((N, F, T), step={2: 2})
    yield "step-f", (N, F, T), strides_for((N, F, T), step={1: 2})
    yield "n1", (1, F, T), strides_for((1, F, T))
    yield "2d", (F, T), strides_for((F, T))
    yield "2d-t", (F, T), strides_for((F, T), order=[1, 0])


def _spectral_cases() -> Iterator[Case]:
    n_fft, hop = 32, 8
    for dt, N, T, onesided in itertools.product((torch.complex64, torch.complex128), (2, 3), (9, 12), (True, False)):
        F = n_fft // 2 + 1 if onesided else n_fft
        for ln, shape, st in _spectral_layouts(N, F, T):
            def build(dt=dt, shape=shape, st=st, onesided=onesided):
                x = leaf(shape, st, dt, False)
                win = torch.hann_window(n_fft, dtype=torch.float64 if dt == torch.complex128 else torch.float32)
                return (lambda z: torch.istft(z, n_fft, hop, window=win, onesided=onesided,
                                              return_complex=not onesided)), (x,), False, \
                    (lambda z: K.predict_istft(TI(z), complex_result=not onesided, env=env()))

            yield Case(f"istft {dt} {shape} {ln} onesided={onesided}", build)


FAMILIES: dict[str, Callable[[], Iterator[Case]]] = {
    "matrix": _matrix_cases,
    "bmm": _bmm_cases,
    "matmul": _matmul_cases,
    "conv": _conv_cases,
    "norm": _norm_cases,
    "pad": _pad_cases,
    "sdpa": _sdpa_cases,
    "einsum": _einsum_cases,
    "spatial": _spatial_cases,
    "rnn": _rnn_cases,
    "spectral": _spectral_cases,
}


def grid(family: str) -> list[Case]:
    return list(FAMILIES[family]())


def sample(family: str, k: int | None, seed: int = 20240501) -> list[Case]:
    cases = grid(family)
    if k is None or k >= len(cases):
        return cases
    return random.Random(seed).sample(cases, k)
