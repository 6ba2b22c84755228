"""Splits run for real: the tasks ``gloo.run`` hands to each gloo process.

Each task builds what it needs from a seed (the same numbers in every process), does
its share of the work with real collectives, and returns its result with the bytes it
handed to each collective (``Handed``) and the bytes it wrote while they ran
(``written``), so that a caller can hold both against the page's formulas and the
result against the same computation done whole in one process. Numbers are eight-byte
floats, so a sharded result differs from the whole one only by the order of its sums.

- ``collective_sizes``: the four collectives (and a ring reduce-scatter written out
  with sends and receives) on one array.
- ``tensor_parallel_block``: one block of ``reference_model``, its matrices cut by
  columns and rows (Megatron-LM), two all-reduces.
- ``zero_step``: one Adam step of a small decoder whose gradients are reduce-scattered
  and whose updated weights are all-gathered (ZeRO stages 1 and 2).
- ``expert_layer``: a mixture of experts whose tokens travel to their experts' devices
  and back with two all-to-alls.
- ``megatron_plan_bytes``: a decoder cut by PyTorch's own tensor-parallel API
  (``parallelize_module``: column- and row-parallel linears, a vocabulary-parallel
  embedding), the bytes of parameters each rank holds.
- ``ring_attention``: causal attention over a sequence cut into one piece a device, the
  keys and values passed round a ring.

Sequence and context parallel run for real are in ``sequence_runs``; training steps
under tensor parallelism and under fully sharded data parallelism, in
``sharded_steps``.

Each ``whole_*`` function computes the same thing in one process from the same seed,
with PyTorch's own modules: the reference a sharded result must equal.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn import functional as F

from .gloo import Handed, written
from .reference_model import Block, Decoder
from ..shapes import ModelShape

__all__ = [
    "whole_block",
    "whole_step",
    "whole_mixture",
    "whole_attention",
    "collective_sizes",
    "ring_reduce_scatter",
    "tensor_parallel_block",
    "adam_step",
    "zero_step",
    "expert_layer",
    "ring_attention",
    "megatron_plan_bytes",
]

DTYPE = torch.float64


def _experts(width: int, experts: int, seed: int) -> list:
    """The experts of ``expert_layer`` (two matrices and a GELU each), from ``seed``."""
    torch.manual_seed(seed)
    return [torch.nn.Sequential(torch.nn.Linear(width, 2 * width, bias=False),
                                torch.nn.GELU(),
                                torch.nn.Linear(2 * width, width, bias=False)).to(DTYPE)
            for _ in range(experts)]


def whole_block(m: ModelShape, tokens: int, seed: int) -> torch.Tensor:
    """``tensor_parallel_block``'s output, the block run whole."""
    torch.manual_seed(seed)
    block = Block(m).to(DTYPE)
    x = torch.randn(1, tokens, m.width, dtype=DTYPE)
    with torch.no_grad():
        return block(x)[0]


def whole_step(m: ModelShape, sequences: int, tokens: int, seed: int) -> torch.Tensor:
    """``zero_step``'s weights, the step taken by one process on the whole batch (with
    the same written-out Adam step)."""
    torch.manual_seed(seed)
    model = Decoder(m).to(DTYPE)
    rows = _batch(m, sequences, tokens, seed)
    logits, _ = model(rows[:, :-1])
    F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten()).backward()
    params = list(model.parameters())
    new, _ = adam_step(torch.cat([p.detach().flatten() for p in params]),
                       torch.cat([p.grad.flatten() for p in params]))
    return new


def whole_mixture(n: int, width: int, experts: int, routes: list, seed: int) -> list:
    """``expert_layer``'s outputs, each rank's tokens through their experts in one
    process."""
    ffns = _experts(width, experts, seed)
    x = torch.randn(n, len(routes[0]), width, dtype=DTYPE)
    with torch.no_grad():
        return [torch.stack([sum(ffns[e](x[r, t]) for e in chosen) / len(chosen)
                             for t, chosen in enumerate(routes[r])]) for r in range(n)]


def whole_attention(m: ModelShape, tokens: int, seed: int) -> torch.Tensor:
    """``ring_attention``'s outputs joined, PyTorch's causal attention over the whole
    sequence."""
    g = torch.Generator().manual_seed(seed)
    queries, keys, values = (
        torch.randn(1, heads, tokens, m.head_dim, dtype=DTYPE, generator=g)
        for heads in (m.heads, m.kv_heads, m.kv_heads))
    return F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                          enable_gqa=m.kv_heads != m.heads)


def _measured(action) -> int:
    """Bytes this process writes while ``action()`` runs, after every process has
    arrived (the barrier's own headers are written before the count starts)."""
    dist.barrier()
    before = written()
    action()
    return written() - before


def ring_reduce_scatter(handed: Handed, flat: torch.Tensor, rank: int, n: int):
    """The sum over all processes of chunk ``rank`` of ``flat`` (a length N divides),
    by a ring of sends and receives: in step s, send the running sum of chunk
    rank - s - 1 on and add the one that arrives to chunk rank - s - 2."""
    chunks = list(flat.clone().chunk(n))
    incoming = torch.empty_like(chunks[0])
    for s in range(n - 1):
        out, into = (rank - s - 1) % n, (rank - s - 2) % n
        handed.exchange(chunks[out], (rank + 1) % n, incoming, (rank - 1) % n,
                        name="ring reduce-scatter")
        chunks[into] = chunks[into] + incoming
    return chunks[rank]


def collective_sizes(rank: int, n: int, numbers: int) -> dict:
    """Bytes written during each collective on an array of ``numbers`` eight-byte
    numbers (a multiple of N), and whether each gave the right answer."""
    x = torch.arange(numbers, dtype=DTYPE) + rank
    total = n * torch.arange(numbers, dtype=DTYPE) + n * (n - 1) / 2
    handed, out = Handed(), {}
    y = x.clone()
    out["all-reduce"] = _measured(lambda: handed.all_reduce(y))
    ok = {"all-reduce": torch.equal(y, total)}
    part = torch.empty(numbers // n, dtype=DTYPE)
    out["reduce-scatter"] = _measured(lambda: handed.reduce_scatter(part, x))
    ok["reduce-scatter"] = torch.equal(part, total.chunk(n)[rank])
    mine = x.chunk(n)[rank].clone()
    gathered = torch.empty(numbers, dtype=DTYPE)
    out["all-gather"] = _measured(lambda: handed.all_gather(gathered, mine))
    ok["all-gather"] = torch.equal(gathered, torch.cat(
        [(torch.arange(numbers, dtype=DTYPE) + r).chunk(n)[r] for r in range(n)]))
    swapped = torch.empty(numbers, dtype=DTYPE)
    out["all-to-all"] = _measured(lambda: handed.all_to_all(swapped, x))
    ok["all-to-all"] = torch.equal(swapped, torch.cat(
        [(torch.arange(numbers, dtype=DTYPE) + r).chunk(n)[rank] for r in range(n)]))
    result = {}
    out["ring reduce-scatter"] = _measured(
        lambda: result.update(sum=ring_reduce_scatter(handed, x, rank, n)))
    ok["ring reduce-scatter"] = torch.equal(result["sum"], total.chunk(n)[rank])
    y = x.clone()
    out["broadcast"] = _measured(lambda: dist.broadcast(y, 0))
    ok["broadcast"] = torch.equal(y, torch.arange(numbers, dtype=DTYPE))
    return {"written": out, "handed": handed.bytes, "right": ok}


def _heads(m: ModelShape, rank: int, n: int) -> tuple[slice, slice]:
    """The query heads' and key-value heads' rows this rank holds."""
    q = m.heads // n
    kv = max(m.kv_heads // n, 1)
    first_kv = (rank * q) // (m.heads // m.kv_heads)  # the group of its first head
    return (slice(rank * q * m.head_dim, (rank + 1) * q * m.head_dim),
            slice(first_kv * m.head_dim, (first_kv + kv) * m.head_dim))


def tensor_parallel_block(rank: int, n: int, m: ModelShape, tokens: int,
                          seed: int) -> dict:
    """One block of ``m`` on a sequence of ``tokens`` positions, its attention cut by
    heads and its feed-forward part by the inner width, with the two all-reduces that
    add the shares."""
    torch.manual_seed(seed)
    block = Block(m).to(DTYPE)
    x = torch.randn(1, tokens, m.width, dtype=DTYPE)
    rows, kv_rows = _heads(m, rank, n)
    inner = slice(rank * m.ffn_width // n, (rank + 1) * m.ffn_width // n)
    a, f, handed = block.attn, block.ffn, Handed()
    with torch.no_grad():
        h = block.norm1(x)
        def heads(weight):  # this rank's heads of a projection: (1, heads, tokens, d_h)
            return (h @ weight.T).view(1, tokens, -1, m.head_dim).transpose(1, 2)

        queries = heads(a.q.weight[rows])
        keys, values = heads(a.k.weight[kv_rows]), heads(a.v.weight[kv_rows])
        y = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                           enable_gqa=queries.shape[1] != keys.shape[1])
        attended = y.transpose(1, 2).reshape(1, tokens, -1) @ a.out.weight[:, rows].T
        sent = _measured(lambda: handed.all_reduce(attended))
        x = x + attended
        h = block.norm2(x)
        up = h @ f.up.weight[inner].T
        act = F.silu(h @ f.gate.weight[inner].T) * up if f.gated else F.gelu(up)
        fed = act @ f.down.weight[:, inner].T
        sent += _measured(lambda: handed.all_reduce(fed))
    return {"output": x + fed, "handed": handed.bytes, "written": sent}


def _batch(m: ModelShape, sequences: int, tokens: int, seed: int) -> torch.Tensor:
    """The step's token ids: ``sequences`` rows of ``tokens`` + 1 (inputs and
    targets)."""
    return torch.randint(m.vocab, (sequences, tokens + 1),
                         generator=torch.Generator().manual_seed(seed + 1))


def adam_step(weights: torch.Tensor, grads: torch.Tensor, lr: float = 1e-2,
              betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
    """The first step of Adam (Kingma and Ba, 2015) from zero averages, number by
    number: the new weights and the two running averages it keeps. (Written out
    because ``torch.optim``'s first step imports PyTorch's compiler, seconds in every
    process; the tests hold it against ``torch.optim.Adam``.)"""
    first = (1 - betas[0]) * grads
    second = (1 - betas[1]) * grads * grads
    step = lr * (first / (1 - betas[0])) / ((second / (1 - betas[1])).sqrt() + eps)
    return weights - step, (first, second)


def zero_step(rank: int, n: int, m: ModelShape, sequences: int, tokens: int,
              seed: int) -> dict:
    """One Adam step of ``Decoder(m)`` on ``sequences`` sequences shared among the
    ranks: gradients reduce-scattered by a ring, each rank's share of the numbers
    updated by its own Adam, the updated numbers all-gathered; returns them whole."""
    torch.manual_seed(seed)
    model = Decoder(m).to(DTYPE)
    rows = _batch(m, sequences, tokens, seed).chunk(n)[rank]
    logits, _ = model(rows[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten(), reduction="sum")
    (loss / (sequences * tokens)).backward()
    params = list(model.parameters())
    flat = torch.cat([p.grad.flatten() for p in params])
    size = -(-flat.numel() // n) * n  # padded to a multiple of N, as FSDP pads
    grads = torch.cat([flat, flat.new_zeros(size - flat.numel())])
    handed, result = Handed(), {}
    sent = _measured(
        lambda: result.update(g=ring_reduce_scatter(handed, grads, rank, n))
    )
    weights = torch.cat([p.detach().flatten() for p in params])
    weights = torch.cat([weights, weights.new_zeros(size - weights.numel())])
    mine, averages = adam_step(weights.chunk(n)[rank], result["g"])
    held = sum(a.numel() * a.element_size() for a in averages)
    gathered = torch.empty(size, dtype=DTYPE)
    sent += _measured(lambda: handed.all_gather(gathered, mine))
    return {"weights": gathered[: flat.numel()], "handed": handed.bytes,
            "written": sent, "optimiser bytes": held, "numbers": flat.numel()}


def expert_layer(rank: int, n: int, width: int, experts: int, routes: list,
                 seed: int) -> dict:
    """A mixture-of-experts feed-forward part with ``experts`` experts (E / N a rank):
    this rank's tokens go to the ranks holding their experts (``routes[rank][t]``
    lists token t's experts) and come back with two all-to-alls; each token's result is
    the mean of its experts' outputs."""
    ffns = _experts(width, experts, seed)
    x = torch.randn(n, len(routes[0]), width, dtype=DTYPE)[rank]
    local = experts // n  # experts per rank; expert e lives on rank e // local
    copies = sorted((e, t) for t, chosen in enumerate(routes[rank]) for e in chosen)
    send = torch.stack([x[t] for _, t in copies])
    counts = torch.zeros(n * local, dtype=torch.int64)
    for e, _ in copies:
        counts[e] += 1
    handed = Handed()
    arriving = torch.empty_like(counts)
    handed.all_to_all(arriving, counts, name="counts")
    out_splits = arriving.view(n, local).sum(1).tolist()
    in_splits = counts.view(n, local).sum(1).tolist()
    received = torch.empty(sum(out_splits), width, dtype=DTYPE)
    sent = _measured(lambda: handed.all_to_all(received, send, out_splits, in_splits,
                                               name="dispatch"))
    done, at = [], 0
    for source in range(n):  # each source sent its copies sorted by expert
        for j in range(local):
            c = int(arriving[source * local + j])
            with torch.no_grad():
                done.append(ffns[rank * local + j](received[at:at + c]))
            at += c
    back = torch.empty_like(send)
    results = torch.cat(done)
    sent += _measured(lambda: handed.all_to_all(back, results, in_splits, out_splits,
                                                name="combine"))
    y = torch.zeros_like(x)
    for (e, t), row in zip(copies, back):
        y[t] += row / len(routes[rank][t])
    return {"output": y, "handed": handed.bytes, "written": sent}


def ring_attention(rank: int, n: int, m: ModelShape, tokens: int, seed: int) -> dict:
    """Causal attention of one layer over ``tokens`` positions cut into N pieces: each
    rank keeps its queries and passes keys and values round the ring N - 1 times,
    folding each piece in with a running maximum and sum."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, tokens, m.head_dim, dtype=DTYPE, generator=g)
               for heads in (m.heads, m.kv_heads, m.kv_heads))
    piece = tokens // n
    mine = slice(rank * piece, (rank + 1) * piece)
    q = q[:, :, mine]
    kv = torch.stack([k[:, :, mine], v[:, :, mine]]).contiguous()
    group = m.heads // m.kv_heads
    largest = torch.full((1, m.heads, piece, 1), float("-inf"), dtype=DTYPE)
    total = torch.zeros_like(largest)
    acc = torch.zeros(1, m.heads, piece, m.head_dim, dtype=DTYPE)
    handed, sent, holder = Handed(), 0, rank
    arriving = torch.empty_like(kv)
    for step in range(n):
        if holder <= rank:  # a piece at or before this rank's own: some pairs allowed
            keys, values = (t.repeat_interleave(group, 1) for t in kv)
            scores = q @ keys.transpose(-1, -2) / m.head_dim**0.5
            if holder == rank:
                scores = scores.masked_fill(
                    torch.ones(piece, piece, dtype=torch.bool).triu(1), float("-inf"))
            new = torch.maximum(largest, scores.amax(-1, keepdim=True))
            scale, weights = torch.exp(largest - new), torch.exp(scores - new)
            total = total * scale + weights.sum(-1, keepdim=True)
            acc, largest = acc * scale + weights @ values, new
        if step < n - 1:
            sent += _measured(lambda: handed.exchange(
                kv, (rank + 1) % n, arriving, (rank - 1) % n, name="keys and values"))
            kv, arriving, holder = arriving.clone(), kv, (holder - 1) % n
    return {"output": acc / total, "handed": handed.bytes, "written": sent}


def megatron_plan_bytes(rank: int, n: int, m: ModelShape) -> dict:
    """Bytes of parameters this rank holds when PyTorch's ``parallelize_module`` cuts a
    decoder of ``m`` as Megatron-LM does (queries, keys, values, gate and up by columns,
    the output and down matrices by rows, both tables by vocabulary rows, norms whole),
    and the sum over all ranks by an all-reduce."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    mesh = init_device_mesh("cpu", (n,))
    torch.manual_seed(0)
    model = Decoder(m).to(torch.bfloat16 if m.bytes_per_number == 2 else DTYPE)
    plan = {"embed": RowwiseParallel(), "head": ColwiseParallel()}
    for i in range(m.layers):
        for name in ("attn.q", "attn.k", "attn.v", "ffn.up", "ffn.gate"):
            plan[f"blocks.{i}.{name}"] = ColwiseParallel()
        for name in ("attn.out", "ffn.down"):
            plan[f"blocks.{i}.{name}"] = RowwiseParallel()
    present = dict(model.named_modules())
    plan = {k: v for k, v in plan.items() if k in present}
    parallelize_module(model, mesh, plan)
    held = 0
    for p in {id(p): p for p in model.parameters()}.values():
        local = p.to_local() if hasattr(p, "to_local") else p
        held += local.numel() * local.element_size()
    total = torch.tensor([held], dtype=torch.int64)
    dist.all_reduce(total)
    return {"bytes": held, "total": int(total.item())}

