"""Training steps run for real, as tasks for ``gloo.run``: tensor parallelism
forward and backward, and fully sharded data parallelism with PyTorch's own
``fully_shard``.

- ``tensor_parallel_training``: one block of ``reference_model`` cut by columns and rows
  (Megatron-LM), forward and backward, with Megatron-LM's two conjugate operators (an
  all-reduce forward and nothing backward after each row-cut block; nothing forward and
  an all-reduce backward before each column-cut one), so that the backward pass's two
  all-reduces are measured apart; ``whole_block_training`` is the block run whole by
  autograd.
- ``fsdp_step``: one Adam step of a small decoder under PyTorch's fully sharded data
  parallelism (ZeRO stage 3): each block's weights gathered before its forward pass,
  dropped, gathered again for its backward pass, its gradients reduce-scattered; the
  forward and backward passes are measured apart.
"""

from __future__ import annotations

import torch
from torch.nn import functional

from .gloo import Handed
from .reference_model import Block, Decoder
from ..shapes import ModelShape
from .sharded_runs import DTYPE, _batch, _heads, _measured, adam_step

__all__ = ["whole_block_training", "tensor_parallel_training", "fsdp_step"]


class _ReduceForward(torch.autograd.Function):
    """Megatron-LM's g: all-reduce the shares forward, pass the gradient back as is."""

    @staticmethod
    def forward(ctx, x, counter):
        ctx.counter = counter
        y = x.clone()
        counter["forward"] += _measured(lambda: counter["handed"].all_reduce(y))
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _ReduceBackward(torch.autograd.Function):
    """Megatron-LM's f: pass the input forward as is, all-reduce its gradient back."""

    @staticmethod
    def forward(ctx, x, counter):
        ctx.counter = counter
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        g = grad.clone()
        ctx.counter["backward"] += _measured(
            lambda: ctx.counter["handed"].all_reduce(g, name="all-reduce, backward"))
        return g, None


def whole_block_training(m: ModelShape, tokens: int, seed: int) -> dict:
    """``tensor_parallel_training``'s results with the block run whole: the output, the
    input's gradient and every weight's gradient for the sum of the outputs."""
    torch.manual_seed(seed)
    block = Block(m).to(DTYPE)
    x = torch.randn(1, tokens, m.width, dtype=DTYPE, requires_grad=True)
    y, _ = block(x)
    y.sum().backward()
    grads = {name: p.grad for name, p in block.named_parameters()}
    return {"output": y.detach()[0], "input gradient": x.grad[0], "gradients": grads}


def tensor_parallel_training(rank: int, n: int, m: ModelShape, tokens: int,
                             seed: int) -> dict:
    """``tensor_parallel_block`` forward and backward for the sum of the outputs: the
    output, the input's gradient, this rank's shares of the weights' gradients (by the
    whole block's parameter names) and the bytes written in each direction."""
    torch.manual_seed(seed)
    block = Block(m).to(DTYPE)
    x = torch.randn(1, tokens, m.width, dtype=DTYPE, requires_grad=True)
    rows, kv_rows = _heads(m, rank, n)
    inner = slice(rank * m.ffn_width // n, (rank + 1) * m.ffn_width // n)
    a, f = block.attn, block.ffn
    counter = {"forward": 0, "backward": 0, "handed": Handed()}
    mine = {"attn.q.weight": (a.q.weight, rows, 0), "attn.k.weight": (a.k.weight,
            kv_rows, 0), "attn.v.weight": (a.v.weight, kv_rows, 0),
            "attn.out.weight": (a.out.weight, rows, 1),
            "ffn.up.weight": (f.up.weight, inner, 0),
            "ffn.down.weight": (f.down.weight, inner, 1)}
    if f.gated:
        mine["ffn.gate.weight"] = (f.gate.weight, inner, 0)
    shares = {name: (w[cut] if dim == 0 else w[:, cut]).detach().clone()
              .requires_grad_() for name, (w, cut, dim) in mine.items()}
    h = _ReduceBackward.apply(block.norm1(x), counter)

    def heads(weight):
        return (h @ weight.T).view(1, tokens, -1, m.head_dim).transpose(1, 2)

    queries = heads(shares["attn.q.weight"])
    keys, values = heads(shares["attn.k.weight"]), heads(shares["attn.v.weight"])
    y = functional.scaled_dot_product_attention(
        queries, keys, values, is_causal=True,
        enable_gqa=queries.shape[1] != keys.shape[1])
    attended = y.transpose(1, 2).reshape(1, tokens, -1) @ shares["attn.out.weight"].T
    x1 = x + _ReduceForward.apply(attended, counter)
    h = _ReduceBackward.apply(block.norm2(x1), counter)
    up = h @ shares["ffn.up.weight"].T
    if f.gated:
        act = functional.silu(h @ shares["ffn.gate.weight"].T) * up
    else:
        act = functional.gelu(up)
    out = x1 + _ReduceForward.apply(act @ shares["ffn.down.weight"].T, counter)
    out.sum().backward()
    return {"output": out.detach()[0], "input gradient": x.grad[0],
            "gradients": {name: t.grad for name, t in shares.items()},
            "cuts": {name: (cut, dim) for name, (_, cut, dim) in mine.items()},
            "written": {"forward": counter["forward"], "backward": counter["backward"]},
            "handed": counter["handed"].bytes}


def fsdp_step(rank: int, n: int, m: ModelShape, sequences: int, tokens: int,
              seed: int) -> dict:
    """One Adam step of ``Decoder(m)`` on ``sequences`` sequences shared among the ranks
    under ``fully_shard`` (each block a unit, the rest the root unit, every unit's
    weights dropped after its forward pass): the bytes written in the forward and in the
    backward pass, the weights after the step gathered whole, and the numbers of the
    shares this rank keeps."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (n,))
    torch.manual_seed(seed)
    model = Decoder(m).to(DTYPE)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh, reshard_after_forward=True)
    rows = _batch(m, sequences, tokens, seed).chunk(n)[rank]
    box = {}
    forward = _measured(lambda: box.update(out=model(rows[:, :-1])[0]))
    loss = functional.cross_entropy(box["out"].flatten(0, 1), rows[:, 1:].flatten())
    backward = _measured(loss.backward)
    held = 0
    for p in model.parameters():
        local = p.to_local()
        new, _ = adam_step(local.detach(), p.grad.to_local())
        with torch.no_grad():
            local.copy_(new)
        held += local.numel()
    whole = torch.cat([p.full_tensor().detach().flatten() for p in model.parameters()])
    return {"weights": whole, "written": {"forward": forward, "backward": backward},
            "numbers held": held}
