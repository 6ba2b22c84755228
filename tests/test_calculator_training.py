"""A training step's memory against a real PyTorch training step on the CPU.

The book's plain decoder (``transformer_arithmetic.runs.reference_model.Decoder``) takes one
mixed-precision step (bfloat16 weights and gradients, a float32 master copy with float32
gradients, as mixed-precision trainers keep them): the weights, gradients, master copy and
the optimizer's state tensors (AdamW, SGD with momentum, bitsandbytes' Adam8bit) are counted
from the real objects; the activations from the tensors autograd saves
(``torch.autograd.graph.saved_tensors_hooks``), with selective recomputation (a fused
attention kernel, which keeps no grid) and with full recomputation (``torch.utils.checkpoint``
around every block). DeepSpeed's estimators and PEFT's LoRA are in test_training_meta.py, the
train command in test_train_cli.py; the teaching module's in test_training.py.

The reference decoder uses LayerNorm: PyTorch's RMSNorm on the CPU is a composite of small
operations that keeps float32 intermediates a fused kernel would not. Besides the counted
activations, PyTorch keeps a few numbers a token that the count leaves out, and the test
names each: LayerNorm's mean and reciprocal deviation, attention's log-sum-exp, the token ids
and the targets, the loss.
"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from transformer_arithmetic import ModelShape
from transformer_arithmetic.runs.reference_model import Decoder
from transformer_calculator.counting.activations import (activation_bytes, logits_bytes,
                                                         softmax_bytes)
from transformer_calculator.reading.plain import model_of
from transformer_calculator.counting.training import Training, step_memory

pytestmark = [pytest.mark.torch_counts, pytest.mark.slow(seconds=8)]

SHAPE = ModelShape(layers=2, heads=4, kv_heads=2, head_dim=16, ffn_width=96, vocab=512, gated_ffn=True,
                   tied_embeddings=False, norm_bias=True, bytes_per_number=2)
B, N = 2, 32


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    warnings.filterwarnings("ignore")


def _step(shape: ModelShape, optimizer: str, recompute: str):
    """One real mixed-precision training step: bfloat16 weights and gradients, a float32 master
    copy with float32 gradients, the optimizer over the master copy. Returns the model, the
    master copy, the optimizer, the bytes autograd saved (by storage, parameters left out) and
    the logits."""
    torch.manual_seed(0)
    model = Decoder(shape).to(torch.bfloat16).train()
    params = list(model.parameters())
    master = [p.detach().float().clone().requires_grad_(True) for p in params]
    if optimizer == "adamw":
        opt = torch.optim.AdamW(master, lr=1e-3)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(master, lr=1e-3, momentum=0.9)
    else:
        import bitsandbytes as bnb

        opt = bnb.optim.Adam8bit(master, lr=1e-3)
    owned = {p.data_ptr() for p in params}
    saved: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in owned:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    tokens, targets = torch.randint(0, shape.vocab, (B, N)), torch.randint(0, shape.vocab, (B, N))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        x = model.embed(tokens)
        for block in model.blocks:
            x = checkpoint(lambda y, b=block: b(y)[0], x, use_reentrant=False) if recompute == "full" \
                else block(x)[0]
        logits = model.head(model.norm(x))
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    loss.backward()
    for p, q in zip(params, master):
        q.grad = p.grad.float()
    opt.step()
    return model, master, opt, sum(saved.values()), logits


def _bytes(tensors) -> int:
    unique = {t.data_ptr(): t for t in tensors}
    return sum(t.numel() * t.element_size() for t in unique.values())


def _states(opt) -> list[torch.Tensor]:
    """The optimizer's state tensors, its per-tensor step counters (scalars) left out."""
    return [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "adam8bit"])
def test_model_states_against_a_real_step(optimizer):
    model, master, opt, _, _ = _step(SHAPE, optimizer, "selective")
    ours = step_memory(model_of(SHAPE), Training(batch=B, seq_len=N, optimizer=optimizer,
                                                 gradients="both"))
    assert ours["weights"] == _bytes(model.parameters())
    assert ours["gradients"] == _bytes(p.grad for p in model.parameters())
    assert ours["float32 master weights"] == _bytes(master)
    assert ours["float32 gradients"] == _bytes(q.grad for q in master)
    assert ours["optimizer states"] == _bytes(_states(opt))


@pytest.mark.parametrize(("recompute", "gated"), [("selective", True), ("full", True),
                                                 ("selective", False)])
def test_activations_against_the_tensors_autograd_saves(recompute, gated):
    shape = ModelShape(**{**SHAPE.__dict__, "gated_ffn": gated, "name": "tiny"})
    _, _, _, saved, logits = _step(shape, "sgd", recompute)
    m, tokens = model_of(shape), B * N
    # what PyTorch keeps besides: each LayerNorm's mean and reciprocal deviation (one bfloat16
    # number each a token), attention's log-sum-exp (one float32 a head a token), the token ids
    # and targets (int64), the loss (one float32)
    norms = 1 + (0 if recompute == "full" else 2 * shape.layers)
    lse = 0 if recompute == "full" else shape.layers * shape.heads * 4
    extra = tokens * (norms * 2 * 2 + lse + 8 + 8) + 4
    ours = activation_bytes(m, B, N, recompute) + softmax_bytes(m, B, N)
    assert saved == ours + extra
    assert logits.numel() * logits.element_size() == logits_bytes(m, B, N)


