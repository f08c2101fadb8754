"""When is a materialised repeat (``repeat``, ``tile``, ``expand(...).contiguous()``) only a
broadcast in disguise? FXL104 reports it.

The consumers may be reached through a chain of ``reshape``/``view``/``permute`` that keeps every
replicated dim a dim of its own (``pos.repeat(B, 1, 1, 1).reshape(B, -1, N).permute(0, 2, 1)`` then
``x + pos``): on an expanded view that chain is a view too whenever it is one on the source."""

from __future__ import annotations

from dataclasses import dataclass

from ..canon import CanonNode
from ..tensor.symbolic import Dim, is_one, known, maybe_eq
from ._util import real_users


@dataclass(frozen=True)
class RepeatLike:
    """A copy that only replicates size-1 dims, and consumers that broadcast anyway."""

    node: CanonNode  # the repeat / tile / contiguous node that copies
    source: CanonNode  # the tensor before it was replicated
    source_shape: tuple[Dim, ...]  # the source's shape, left-padded with 1s to the output rank
    out_shape: tuple[Dim, ...]
    dims: tuple[int, ...]  # output dims that were replicated
    spelled: str  # ".repeat(4, 1)", ".tile((2, 1))", ".expand(4, 6).contiguous()"
    consumers: tuple[CanonNode, ...]
    drop: bool  # True: every consumer gets the same result from the source as is (no expand needed)
    via: tuple[tuple[str, ...], ...] = ()  # per consumer: the view ops between the repeat and it
    unsqueeze: int | None = None  # a tiled dim only read split in two by a view: the copies' dim in the split
    # (``source.unsqueeze(k)`` is the un-replicated tensor its consumers broadcast)
    splits: tuple[CanonNode, ...] = ()  # those views
    interleave: int | None = None  # a repeat_interleave(r, dim) of a longer dim read only by elementwise ops: r
    # (they can read the other operands split, `.unflatten(dim, (-1, r))`, against `source.unsqueeze(dim + 1)`)
    via_cat: bool = False  # on the way, a cat along that dim of interleaved pieces (it commutes with the interleave)


def repeat_like(node: CanonNode) -> RepeatLike | None:
    """The analysis when ``node`` replicates only size-1 dims and every consumer is an elementwise
    op that broadcasts, or an op that writes a new tensor from it through its strides (``cat``, ``stack``, a
    gather: ``reads_any_layout``), reached directly, through view ops, or over a graph break
    (``CanonNode.handed_to``); None otherwise (true tiling, or a consumer that needs the real tensor)."""
    shaped = _replication(node)
    if shaped is None:
        return _split_replication(node) or _interleaved_elementwise(node)
    source, src_shape, out_shape, dims, spelled = shaped
    if not dims and node.op != "repeat":
        return None  # a repeat by 1 everywhere (a factor that is 1 at these sizes) replicates nothing: a plain copy
    reached = _broadcast_consumers(node, src_shape, dims, ())
    if not reached:
        return None
    strided = not (source.tensor is not None and source.tensor.is_contiguous())
    if strided and any(u.op in ("index", "gather") or {"view", "reshape"} & set(via) for u, _, _, via in reached):
        return None  # an expanded view of a strided source keeps its strides through a gather, and a view or
        # reshape of it may refuse or copy (`x.t().unsqueeze(0).repeat(2, 1, 1).view(2, -1)`)
    drop = _droppable(reached)
    if drop is None:
        return None
    return RepeatLike(node, source, src_shape, out_shape, dims, spelled, tuple(r[0] for r in reached), drop,
                      tuple(r[3] for r in reached))


def _droppable(reached: list[tuple[CanonNode, CanonNode, tuple[Dim, ...], tuple[str, ...]]]) -> bool | None:
    """True when every consumer gives the same result from the un-replicated source as it is; None when an
    attention mask consumer would need the expanded view (an expanded mask makes SDPA's CPU backward copy the
    gradients of q, k and v, measured: only the broadcast mask is free)."""
    drop = True
    for u, operand, shape, via in reached:
        if _is_mask_of(u, operand):
            scores = _scores_shape(u)
            if via or scores is None or not _broadcasts_to(shape, scores):
                return None
            continue
        # shape of u if this operand were the un-replicated source: the others must cover the dims
        others = [i.tensor.shape for i in u.tensor_inputs if i is not operand and i.tensor is not None]
        # through a chain, the chain's own sizes (reshape(B, ...)) name the replicated dims: expand, not drop
        if via or u.tensor is None or not u.is_pointwise or not _covers(others, shape, u.tensor.shape):
            drop = False
    if not drop and any(_is_mask_of(u, operand) for u, operand, _, _ in reached):
        return None
    return drop


def _is_mask_of(u: CanonNode, operand: CanonNode) -> bool:
    """``operand`` is the ``attn_mask`` of the attention ``u`` (not also its query, key or value)."""
    return (u.op == "scaled_dot_product_attention" and u.args.get("attn_mask") is operand
            and all(u.args.get(k) is not operand for k in ("query", "key", "value")))


def _scores_shape(u: CanonNode) -> tuple[Dim, ...] | None:
    """The (..., L, S) shape of an attention's scores, which its mask is broadcast to."""
    q, k = u.args.get("query"), u.args.get("key")
    if not isinstance(q, CanonNode) or not isinstance(k, CanonNode) or q.tensor is None or k.tensor is None:
        return None
    return tuple(q.tensor.shape[:-1]) + (k.tensor.shape[-2],)


def _split_replication(node: CanonNode) -> RepeatLike | None:
    """A ``repeat_interleave(r, dim=d)`` (or a ``repeat`` tiling one dim) of a dim of size n > 1 whose every user
    is a ``view``/``reshape`` splitting that dim into (n, r) (or (r, n)): the copies' dim is then a broadcast one
    (``mask.repeat_interleave(H, dim=0).view(B, H, L, L)`` is ``mask.unsqueeze(1).expand(B, H, L, L)``)."""
    tiled = _tiled_dim(node)
    out = node.tensor
    if tiled is None or out is None:
        return None
    source, d, times, interleave, spelled = tiled
    assert source.tensor is not None
    n = source.tensor.shape[d]
    k = d + 1 if interleave else d
    want = tuple(out.shape[:d]) + ((n, times) if interleave else (times, n)) + tuple(out.shape[d + 1:])
    users = real_users(node)
    if not users:
        return None
    reached: list[tuple[CanonNode, CanonNode, tuple[Dim, ...], tuple[str, ...]]] = []
    split_shape: tuple[Dim, ...] = want
    for u in users:
        if u.op not in ("view", "reshape") or u.input is not node or u.tensor is None:
            return None
        res = tuple(u.tensor.shape)
        if len(res) != len(want) or any(maybe_eq(a, b) is not True for a, b in zip(res, want)):
            return None
        split_shape = res
        src_shape = res[:k] + (1,) + res[k + 1:]
        sub = _broadcast_consumers(u, src_shape, (k,), ())
        if not sub:
            return None
        reached.extend(sub)
    if not (source.tensor is not None and source.tensor.is_contiguous()) and any(
            u.op in ("index", "gather") or {"view", "reshape"} & set(via) for u, _, _, via in reached):
        return None
    drop = _droppable(reached)
    if drop is None:
        return None
    src_padded = split_shape[:k] + (1,) + split_shape[k + 1:]
    return RepeatLike(node, source, src_padded, split_shape, (k,), spelled, tuple(r[0] for r in reached), drop,
                      tuple(r[3] for r in reached), unsqueeze=k, splits=tuple(users))


def _interleaved_elementwise(node: CanonNode) -> RepeatLike | None:
    """A ``repeat_interleave(r, dim=d)`` of a dim of size n > 1 whose every reader is elementwise, reached
    directly or through casts, views and subscripts that keep the dims from ``d`` on, and ``cat``s along ``d``
    of such interleaved pieces: rotary tables (``freqs.cos().repeat_interleave(2, dim=-1)`` multiplied into
    ``x``). Each reader gives the same values on ``other.unflatten(d, (n, r))`` against
    ``source.unsqueeze(d + 1)``, flattened back: a broadcast, no copy."""
    tiled = _tiled_dim(node)
    out = node.tensor
    if tiled is None or out is None or node.op != "repeat_interleave":
        return None
    source, d, times, _, spelled = tiled
    r = known(times)
    if r is None:
        return None
    neg = d - len(out.shape)  # counted from the end: leading dims may come and go on the way
    found = _elementwise_reads(node, neg, r, 0)
    if not found:
        return None
    readers, via_cat = found
    return RepeatLike(node, source, tuple(out.shape), tuple(out.shape), (d,), spelled, tuple(readers), False,
                      interleave=r, via_cat=via_cat)


_INTERLEAVE_DEPTH = 6


def _elementwise_reads(node: CanonNode, neg: int, r: int, depth: int) -> tuple[list[CanonNode], bool] | None:
    users = real_users(node)
    if not users or node.tensor is None or depth > _INTERLEAVE_DEPTH:
        return None
    size = node.tensor.shape[neg]
    tail = tuple(node.tensor.shape[neg:])
    readers: list[CanonNode] = []
    via_cat = False
    for u in users:
        t = u.tensor
        if t is None or u.mutates or u.kind == "output" or len(t.shape) < -neg:
            return None
        if u.op == "cat":
            if _cat_dim(u, len(t.shape)) != neg or not all(_interleaved_by(i, neg, r) for i in _cat_inputs(u)):
                return None
            sub = _elementwise_reads(u, neg, r, depth + 1)
            via_cat = True
        elif (u.op in ("to", "slice", "view", "reshape") and u.input is node
              and tuple(t.shape[neg:]) == tail and maybe_eq(t.shape[neg], size) is True
              and (u.op != "slice" or len(t.shape) >= len(node.tensor.shape))):  # a subscript removing a dim
            # may remove the interleaved one itself (`t[..., 0]` of a square tensor keeps the trailing sizes)
            dev = u.args.get("device") if u.op == "to" else None
            if dev is not None and str(dev).split(":")[0] != node.tensor.device.type:
                return None  # a transfer: the un-interleaved tensor would be sent instead, another finding
            sub = _elementwise_reads(u, neg, r, depth + 1)
        elif u.is_pointwise and maybe_eq(t.shape[neg], size) is True:
            others = [i.tensor for i in u.tensor_inputs if i is not node and i.tensor is not None]
            if any(len(o.shape) >= -neg and maybe_eq(o.shape[neg], size) is not True for o in others):
                return None  # an operand broadcast along the interleaved dim: it would need its own unsqueeze
            readers.append(u)
            continue
        else:
            return None
        if sub is None:
            return None
        readers.extend(sub[0])
        via_cat = via_cat or sub[1]
    return readers, via_cat


def _cat_inputs(u: CanonNode) -> list[CanonNode]:
    raw = u.args.get("args") or []
    pieces = raw[0] if raw and isinstance(raw[0], (list, tuple)) else u.args.get("tensors") or []
    return [p for p in pieces if isinstance(p, CanonNode)]


def _cat_dim(u: CanonNode, rank: int) -> int | None:
    raw = u.args.get("args") or []
    kwargs = u.args.get("kwargs") or {}
    dim = raw[1] if len(raw) > 1 else kwargs.get("dim", u.args.get("dim", 0))
    if not isinstance(dim, int):
        return None
    return dim - rank if dim >= 0 else dim


def _interleaved_by(n: CanonNode, neg: int, r: int) -> bool:
    """``n`` is (a cast of) a ``repeat_interleave(r)`` along the dim ``neg`` counted from the end."""
    for _ in range(_INTERLEAVE_DEPTH):  # casts (`.float()`, `.to(dtype)`) are not views: walked here
        if n.op != "to" or n.input is None:
            break
        n = n.input
    if n.op != "repeat_interleave" or n.tensor is None or n.args.get("repeats") != r:
        return False
    d = n.args.get("dim")
    return isinstance(d, int) and (d - len(n.tensor.shape) if d >= 0 else d) == neg


def interleave_dim(node: CanonNode, rank: int) -> int | None:
    """The dim (0 to rank - 1) a ``repeat_interleave`` node repeats along, None when it flattens (no dim) or its
    repeats are a tensor of counts."""
    r, d = node.args.get("repeats"), node.args.get("dim")
    if not isinstance(d, int) or isinstance(r, bool) or (isinstance(r, CanonNode) and r.tensor is not None):
        return None
    return d % rank


def interleave_text(node: CanonNode) -> str:
    """``.repeat_interleave(2, dim=-1)``, as the node's arguments spell it."""
    r = node.args.get("repeats")
    return f".repeat_interleave({getattr(r, 'name', r)}, dim={node.args.get('dim')})"


def _tiled_dim(node: CanonNode) -> tuple[CanonNode, int, Dim, bool, str] | None:
    """(source, dim, times, interleaved, as written) when ``node`` copies one dim of size > 1 several times:
    ``repeat_interleave(r, dim=d)`` or a ``repeat`` whose one factor above 1 is on such a dim."""
    src, out = node.input, node.tensor
    if src is None or src.tensor is None or out is None or len(src.tensor.shape) != len(out.shape):
        return None
    shape = tuple(src.tensor.shape)
    if node.op == "repeat_interleave":
        d = interleave_dim(node, len(shape))
        if d is None:
            return None
        times = _factor(out.shape[d], shape[d])
        if times is None or is_one(shape[d]) or known(times) == 1:
            return None
        return src, d, times, True, interleave_text(node)
    if node.op == "repeat" and node.args.get("style") != "tile":
        reps = [_factor(o, i) for o, i in zip(out.shape, shape)]
        if any(r is None for r in reps):
            return None
        tiled = [i for i, r in enumerate(reps) if known(r) != 1]
        if len(tiled) != 1 or is_one(shape[tiled[0]]):
            return None
        d = tiled[0]
        times = reps[d]
        assert times is not None
        return src, d, times, False, f".repeat({', '.join(str(r) for r in reps)})"
    return None


#: view ops a replicated tensor may pass through on its way to a broadcasting consumer
_CHAIN = ("reshape", "view", "permute")
_MAX_CHAIN = 4


def _broadcast_consumers(node: CanonNode, src_shape: tuple[Dim, ...], dims: tuple[int, ...],
                         via: tuple[str, ...]) -> list[tuple[CanonNode, CanonNode, tuple[Dim, ...], tuple[str, ...]]]:
    """Every elementwise consumer of ``node`` reached directly or through ``_CHAIN`` view ops that keep
    the replicated ``dims`` whole: (consumer, the operand it reads, the source's shape as that operand
    would have it, the view ops on the way). Empty when any path ends elsewhere (a reduction, a
    matmul, an in-place write, the graph's output when no graph after a break receives it)."""
    users = real_users(node)
    if not users or node.tensor is None:
        return []
    out: list[tuple[CanonNode, CanonNode, tuple[Dim, ...], tuple[str, ...]]] = []
    for u in users:
        if u.kind == "output":  # returned at a graph break: its consumers are in the graph resumed after it
            handed = [h for h in node.handed_to if h.tensor is not None]
            if not handed:
                return []
            for h in handed:
                sub = _broadcast_consumers(h, src_shape, dims, via)
                if not sub:
                    return []
                out.extend(sub)
            continue
        if u.op in _CHAIN and len(via) < _MAX_CHAIN and u.tensor is not None and u.input is node:
            mapped = _through(u, node.tensor.shape, src_shape, dims)
            if mapped is None:
                return []
            sub = _broadcast_consumers(u, mapped[0], mapped[1], (*via, u.op))
            if not sub:
                return []
            out.extend(sub)
            continue
        if u.tensor is None or u.mutates or not (u.is_pointwise or reads_any_layout(u, node) or _is_mask_of(u, node)):
            return []
        out.append((u, node, src_shape, via))
    return out


#: ops that write a new tensor of their own from their data operand, reading it through its strides: a stride-0
#: (expanded) operand costs them nothing more than the copy a ``repeat`` made (profiled: ``torch.cat``,
#: ``torch.stack``, ``index_select``, advanced indexing and ``gather`` of an expanded view run no ``copy_``)
_READS_ANY_LAYOUT = frozenset({"cat", "concat", "concatenate", "stack", "index", "gather"})


def reads_any_layout(u: CanonNode, operand: CanonNode) -> bool:
    """Does ``u`` read ``operand`` as data it writes into a new tensor (a ``cat``'s piece, the tensor an index or
    ``gather`` reads rows from; not the index itself)?"""
    if u.op not in _READS_ANY_LAYOUT:
        return False
    if u.op in ("index", "gather"):
        return u.input is operand and all(i is not operand for i in u.inputs if i is not u.input)
    return True


def _through(u: CanonNode, shape: tuple[Dim, ...], src: tuple[Dim, ...],
             dims: tuple[int, ...]) -> tuple[tuple[Dim, ...], tuple[int, ...]] | None:
    """The source's shape and the replicated dims after the view op ``u``; None when ``u`` merges or
    splits a replicated dim (then an expanded view may have to be copied)."""
    assert u.tensor is not None
    res = tuple(u.tensor.shape)
    if u.op == "permute":
        perm = u.args.get("dims")
        if not isinstance(perm, (list, tuple)) or sorted(perm) != list(range(len(src))):
            return None
        return tuple(src[p] for p in perm), tuple(i for i, p in enumerate(perm) if p in dims)
    if not dims:  # nothing replicated: a permute reads the source as it reads the copy; a view or reshape may
        return None  # need the copy's contiguous memory (`x.t().repeat(1, 1).view(-1)`)
    # reshape/view: every dim up to the last replicated one must come through unchanged
    last = max(dims)
    if len(res) <= last or any(maybe_eq(shape[i], res[i]) is not True for i in range(last + 1)):
        return None
    return tuple(src[: last + 1]) + res[last + 1:], dims


def _replication(node: CanonNode) -> tuple[CanonNode, tuple[Dim, ...], tuple[Dim, ...], tuple[int, ...], str] | None:
    out = node.tensor
    if out is None:
        return None
    if node.op == "repeat_interleave":  # of a size-1 dim: the same as a repeat of it
        src = node.input
        if src is None or src.tensor is None or len(src.tensor.shape) != len(out.shape):
            return None
        shape = tuple(src.tensor.shape)
        d = interleave_dim(node, len(shape))
        if d is None or not is_one(shape[d]) or is_one(out.shape[d]):
            return None
        return src, shape, tuple(out.shape), (d,), interleave_text(node)
    if node.op == "repeat":
        src = node.input
        if src is None or src.tensor is None:
            return None
        shape = tuple(src.tensor.shape)
        padded = (1,) * (len(out.shape) - len(shape)) + shape
        if len(padded) != len(out.shape):
            return None
        # the factors from the shapes: repeats given as sizes read from tensors (symbolic_trace) have no
        # value in the graph, but the output shape does
        reps = tuple(_factor(o, i) for o, i in zip(out.shape, padded))
        if any(r is None for r in reps):
            return None
        dims = tuple(d for d, r in enumerate(reps) if r != 1)
        if any(not is_one(padded[d]) for d in dims):
            return None  # a dim of size > 1 is tiled: that is data, not a broadcast
        name = "tile" if node.args.get("style") == "tile" else "repeat"
        text = f".tile({reps})" if name == "tile" else f".repeat({', '.join(map(str, reps))})"
        return src, padded, tuple(out.shape), dims, text
    if node.op == "contiguous":
        exp = node.input
        if exp is None or exp.op != "expand" or exp.input is None:
            return None
        src = exp.input
        if src.tensor is None:
            return None
        shape = tuple(src.tensor.shape)
        padded = (1,) * (len(out.shape) - len(shape)) + shape
        dims = tuple(d for d in range(len(out.shape)) if is_one(padded[d]) and not is_one(out.shape[d]))
        text = f".expand({', '.join(str(s) for s in out.shape)}).contiguous()"
        return src, padded, tuple(out.shape), dims, text
    return None


def _factor(out: Dim, inp: Dim) -> Dim | None:
    if is_one(inp):
        return out  # a size-1 dim replicated `out` times, symbolic or not (dynamic batch sizes)
    o, i = known(out), known(inp)
    if o is None or i is None:
        return 1 if maybe_eq(out, inp) is True else None
    if i == 0:
        return 1 if o == 0 else None
    return o // i if o % i == 0 else None


def _broadcasts_to(shape: tuple[Dim, ...], target: tuple[Dim, ...]) -> bool:
    """Does ``shape`` broadcast to ``target`` (each dim 1 or the same, no more dims)?"""
    if len(shape) > len(target):
        return False
    return all(is_one(a) or maybe_eq(a, b) is True for a, b in zip(reversed(shape), reversed(target)))


def _covers(others: list[tuple[Dim, ...]], src: tuple[Dim, ...], result: tuple[Dim, ...]) -> bool:
    """Does broadcasting ``src`` with ``others`` give ``result``?"""
    rank = max([len(result), len(src)] + [len(o) for o in others])
    shapes = [(1,) * (rank - len(s)) + tuple(s) for s in [src, *others]]
    want = (1,) * (rank - len(result)) + tuple(result)
    for d in range(rank):
        sizes = [s[d] for s in shapes if not is_one(s[d])]
        got: Dim = sizes[0] if sizes else 1
        if maybe_eq(got, want[d]) is not True:
            return False
    return True


@dataclass(frozen=True)
class ChainedRepeat:
    """A repeat whose copy is read only by another repeat: the two can be one copy."""

    node: CanonNode  # the first repeat (its copy is the one that goes)
    second: CanonNode  # the repeat that reads it
    one_copy: str | None  # the single-copy spelling (`x[:, :, None].expand(-1, -1, 2).reshape(4, 6)`), when known


def chained_repeat(node: CanonNode) -> ChainedRepeat | None:
    """``x.repeat_interleave(a, d1).repeat_interleave(b, d2)`` (or ``repeat``s): the first result is a copy only
    the second reads, and the second copies it again. Expanding size-1 dims inserted next to both dims and
    reshaping once makes one copy of the final size."""
    if node.op not in ("repeat", "repeat_interleave") or node.tensor is None or node.args.get("style") == "tile":
        return None
    users = real_users(node)
    if len(users) != 1:
        return None
    second = users[0]
    if second.op not in ("repeat", "repeat_interleave") or second.input is not node or second.tensor is None:
        return None
    if second.args.get("style") == "tile":
        return None
    a, b = _single_dim(node), _single_dim(second)
    one_copy = None
    if a is not None and b is not None and a[0] != b[0] and node.input is not None and node.input.tensor is not None:
        one_copy = _one_copy_text(len(node.input.tensor.shape), [a, b], tuple(second.tensor.shape))
    return ChainedRepeat(node, second, one_copy)


def _single_dim(node: CanonNode) -> tuple[int, int, bool] | None:
    """(dim, copies, interleaved) of a repeat or repeat_interleave that copies along one dim of its input (of the
    same rank; copies may be 1), None otherwise."""
    src, out = node.input, node.tensor
    if src is None or src.tensor is None or out is None or len(src.tensor.shape) != len(out.shape):
        return None
    shape = tuple(src.tensor.shape)
    if node.op == "repeat_interleave":
        d = interleave_dim(node, len(shape))
        if d is None:
            return None
        times = known(_factor(out.shape[d], shape[d]) or 0) if not is_one(shape[d]) else known(out.shape[d])
        return (d, times, True) if times else None
    reps = [known(_factor(o, i) or 0) for o, i in zip(out.shape, shape)]
    moved = [i for i, r in enumerate(reps) if r != 1]
    if any(not r for r in reps) or len(moved) > 1:
        return None
    d = moved[0] if moved else 0
    return d, reps[d] or 1, False


def _one_copy_text(rank: int, steps: list[tuple[int, int, bool]], final: tuple[Dim, ...]) -> str:
    """``[:, None, :, None].expand(-1, 2, -1, 3).reshape(4, 6)``: one copy for the repeats ``steps``."""
    index: list[str] = []
    sizes: list[str] = []
    by_dim = {d: (r, inter) for d, r, inter in steps}
    for d in range(rank):
        if d in by_dim and not by_dim[d][1]:
            index.append("None")
            sizes.append(str(by_dim[d][0]))
        index.append(":")
        sizes.append("-1")
        if d in by_dim and by_dim[d][1]:
            index.append("None")
            sizes.append(str(by_dim[d][0]))
    return (f"[{', '.join(index)}].expand({', '.join(sizes)}).reshape({', '.join(str(s) for s in final)})")
