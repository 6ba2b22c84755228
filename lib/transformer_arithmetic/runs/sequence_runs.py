"""Sequence and context parallel run for real: tasks for ``gloo.run``, in the
manner of ``sharded_runs`` (eight-byte numbers, a seed, the bytes handed and written).

- ``sequence_parallel_block``: one block under tensor parallel with sequence parallelism
  (Korthikanti et al.), autograd on: each rank's positions of the output, and the bytes
  autograd keeps on it for the backward pass.
- ``context_parallel_attention``: causal attention over a sequence cut into two pieces a
  rank in the zigzag order, every piece's keys and values all-gathered (Llama 3's form).

``sharded_runs.whole_attention`` and ``reference_model.Block`` compute the same in one
process: the reference a sharded result must equal.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn import functional as F

from .gloo import Handed
from .reference_model import Block
from ..shapes import ModelShape
from .sharded_runs import DTYPE, _heads, _measured

__all__ = ["sequence_parallel_block", "context_parallel_attention"]


class _GatherLinear(torch.autograd.Function):
    """The column-parallel matrix of sequence parallelism (Korthikanti et al.): gather
    every rank's positions, multiply by this rank's rows; keep only the rank's own
    positions for the backward pass, which gathers them again."""

    @staticmethod
    def forward(ctx, shard, weight, handed, n):
        full = torch.empty(shard.shape[0] * n, *shard.shape[1:], dtype=shard.dtype)
        handed.all_gather(full, shard.contiguous(), name="sequence all-gather")
        ctx.save_for_backward(shard, weight)
        ctx.n = n
        return full @ weight.T

    @staticmethod
    def backward(ctx, grad):
        shard, weight = ctx.saved_tensors
        full = torch.empty(shard.shape[0] * ctx.n, *shard.shape[1:], dtype=shard.dtype)
        dist.all_gather_into_tensor(full, shard.contiguous())
        part = torch.empty_like(shard)
        dist.reduce_scatter_tensor(part, (grad @ weight).contiguous())
        return part, grad.transpose(-1, -2) @ full, None, None


class _ScatterLinear(torch.autograd.Function):
    """The row-parallel matrix of sequence parallelism: multiply by this rank's
    columns, add the ranks' shares and hand each rank its own positions
    (reduce-scatter)."""

    @staticmethod
    def forward(ctx, x, weight, handed, n):
        partial = (x @ weight.T).contiguous()
        mine = torch.empty(partial.shape[0] // n, *partial.shape[1:], dtype=x.dtype)
        handed.reduce_scatter(mine, partial, name="sequence reduce-scatter")
        ctx.save_for_backward(x, weight)
        ctx.n = n
        return mine

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        full = torch.empty(grad.shape[0] * ctx.n, *grad.shape[1:], dtype=grad.dtype)
        dist.all_gather_into_tensor(full, grad.contiguous())
        return full @ weight, full.transpose(-1, -2) @ x, None, None


def sequence_parallel_block(rank: int, n: int, m: ModelShape, tokens: int,
                            seed: int) -> dict:
    """One block of ``m`` under tensor parallel with sequence parallelism, autograd
    on: this rank holds 1 / N of the positions outside attention and the feed-forward
    part (normalisations and residual sums), its heads and its share of the inner
    width inside them, each all-reduce replaced by an all-gather before the first
    matrices and a reduce-scatter after the last. Returns this rank's positions of the
    output, the bytes of the tensors autograd keeps for the backward pass (counted by
    storage, parameters left out), and the bytes handed to each collective."""
    torch.manual_seed(seed)
    block = Block(m).to(DTYPE)
    x = torch.randn(tokens, 1, m.width, dtype=DTYPE)  # positions first, as Megatron-LM
    per = tokens // n
    shard = x[rank * per:(rank + 1) * per].clone().requires_grad_(True)
    rows, kv_rows = _heads(m, rank, n)
    inner = slice(rank * m.ffn_width // n, (rank + 1) * m.ffn_width // n)
    a, f, handed = block.attn, block.ffn, Handed()
    owned = {p.untyped_storage().data_ptr() for p in block.parameters()}
    saved: dict[int, int] = {}

    def pack(t):  # a rank's rows or columns of a weight are views of the parameter
        where = t.untyped_storage().data_ptr()
        if where not in owned:
            saved[where] = t.untyped_storage().nbytes()
        return t

    def heads(y):  # (1, heads, tokens, d_h) from (tokens, 1, heads d_h)
        return y.transpose(0, 1).reshape(1, tokens, -1, m.head_dim).transpose(1, 2)

    width = inner.stop - inner.start
    qkv = torch.cat([a.q.weight[rows], a.k.weight[kv_rows], a.v.weight[kv_rows]])
    fused = torch.cat([f.gate.weight[inner], f.up.weight[inner]] if f.gated
                      else [f.up.weight[inner]])
    owned |= {qkv.untyped_storage().data_ptr(), fused.untyped_storage().data_ptr()}
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        h = block.norm1(shard)
        q, k, v = _GatherLinear.apply(h, qkv, handed, n).split(
            [rows.stop - rows.start] + 2 * [kv_rows.stop - kv_rows.start], dim=-1)
        queries, keys, values = heads(q), heads(k), heads(v)
        y = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                           enable_gqa=queries.shape[1] != keys.shape[1])
        o = y.transpose(1, 2).reshape(1, tokens, -1).transpose(0, 1)
        x2 = shard + _ScatterLinear.apply(o, a.out.weight[:, rows], handed, n)
        h2 = block.norm2(x2)
        both = _GatherLinear.apply(h2, fused, handed, n)
        act = (F.silu(both[..., :width]) * both[..., width:] if f.gated
               else F.gelu(both))
        out = x2 + _ScatterLinear.apply(act, f.down.weight[:, inner], handed, n)
    return {"output": out.detach().transpose(0, 1), "saved": sum(saved.values()),
            "handed": handed.bytes}


def context_parallel_attention(rank: int, n: int, m: ModelShape, tokens: int,
                               seed: int) -> dict:
    """Causal attention of one layer over ``tokens`` positions cut into 2N pieces,
    rank i holding pieces i and 2N - 1 - i (the zigzag order that balances the causal
    mask, Llama 3's), with every piece's keys and values all-gathered before attention
    (Llama 3's all-gather form): this rank's rows of the output, the allowed (query,
    key) pairs it computes, and the bytes it handed and wrote."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, tokens, m.head_dim, dtype=DTYPE, generator=g)
               for heads in (m.heads, m.kv_heads, m.kv_heads))
    piece = tokens // (2 * n)
    mine = torch.cat([torch.arange(i * piece, (i + 1) * piece)
                      for i in (rank, 2 * n - 1 - rank)])
    kv = torch.stack([k[:, :, mine], v[:, :, mine]]).contiguous()
    gathered = torch.empty(n, *kv.shape, dtype=DTYPE)
    handed = Handed()
    sent = _measured(lambda: handed.all_gather(gathered.view(-1), kv.view(-1),
                                               name="keys and values"))
    order = torch.cat([torch.cat([torch.arange(i * piece, (i + 1) * piece)
                                  for i in (r, 2 * n - 1 - r)]) for r in range(n)])
    keys = torch.empty_like(k)
    values = torch.empty_like(v)
    keys[:, :, order] = gathered[:, 0].permute(1, 2, 0, 3, 4).reshape(keys.shape)
    values[:, :, order] = gathered[:, 1].permute(1, 2, 0, 3, 4).reshape(values.shape)
    allowed = mine[:, None] >= torch.arange(tokens)[None, :]
    y = F.scaled_dot_product_attention(q[:, :, mine], keys, values, attn_mask=allowed,
                                       enable_gqa=m.kv_heads != m.heads)
    return {"rows": mine.tolist(), "output": y, "pairs": int(allowed.sum()),
            "handed": handed.bytes, "written": sent}
