"""Each device's share of a split model, as a layout of its own.

A tensor-parallel device holds h / N_tp query heads, h_kv / N_tp key-value heads (one
copy where there are fewer than N_tp), f / N_tp of each feed-forward width and V / N_tp
vocabulary rows, padded up as Megatron-LM pads them; normalisations, routers and a
latent attention's down-projections (and a sparse one's indexer) stay whole on every
device; a Gated DeltaNet layer holds 1 / N_tp of its key and value heads. An
expert-parallel device holds (E + R) / N_ep whole experts, R copies of the busiest
beside the model's own E (redundant experts), each cut by N_tp / N_ep more where N_ep
is smaller than N_tp, and serves the tokens of the N_ep / N_tp model copies its group
spans (attention data parallel beside expert parallel). A pipeline stage holds its
layers; the first stage the input table, the last the output head and the final
normalisation (a tied table is copied to both ends, as Megatron-LM does). Every byte
and second of a device is then the calculator's own count of that layout (``costs``,
``training``).
"""

from __future__ import annotations

import dataclasses

from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.mixers import Attention
from ..anatomy.recurrent import GatedDeltaNet
from ..anatomy.model import Model
from .checks import physical_experts, stage_layers
from .plan import Split

__all__ = ["device_model", "stage_models", "expert_layers"]


def _share(k: int, parts: int) -> float | int:
    """A device's expected share of a token's ``k`` experts: k / N_ep (whole when it
    divides)."""
    return k // parts if k % parts == 0 else k / parts


def _cut(n: int, parts: int) -> int:
    return -(-n // parts)


def _mixer(m, tp: int):
    if tp == 1:
        return m
    if isinstance(m, Attention):
        kv = max(m.kv_heads // tp, 1)
        stored = m.stored_kv_heads and max(m.stored_kv_heads // tp, 1)
        return dataclasses.replace(m, heads=m.heads // tp, kv_heads=kv,
                                   stored_kv_heads=stored)
    if isinstance(m, GatedDeltaNet):  # key and value heads, the filter's channels
        return dataclasses.replace(m, key_heads=m.key_heads // tp,
                                   value_heads=m.value_heads // tp)
    # latent: down-projections whole; a sparse one's indexer whole on every device
    return dataclasses.replace(m, heads=m.heads // tp)


def _ffn(f, s: Split, physical: int):
    if isinstance(f, FeedForward):
        return dataclasses.replace(f, inner=f.inner // s.tp)
    if isinstance(f, Experts):
        count = physical // s.ep
        kept = (f.count - count) * f.width  # the router's rows stay on every device
        shared = f.shared and dataclasses.replace(f.shared,
                                                  inner=f.shared.inner // s.tp)
        return dataclasses.replace(
            f, count=count, per_token=_share(f.per_token, s.ep),
            inner=f.inner // s.expert_cut, shared=shared,
            router_extra=f.router_extra + kept,
            tokens_from=s.copies_per_expert_group)
    return f


def device_model(model: Model, s: Split) -> Model:
    """One tensor- and expert-parallel device's share of the whole model (every layer:
    the single stage when N_pp = 1)."""
    lay = model.layout
    physical = physical_experts(model, s)
    cut: dict = {}  # each distinct block cut once (layers repeat)
    for b in lay.blocks:
        if b not in cut:
            cut[b] = dataclasses.replace(b, mixer=_mixer(b.mixer, s.tp),
                                         ffn=_ffn(b.ffn, s, physical))
    blocks = tuple(cut[b] for b in lay.blocks)
    layout = dataclasses.replace(lay, blocks=blocks, vocab=_cut(lay.vocab, s.tp))
    return dataclasses.replace(model, layout=layout)


_MEMO: dict[tuple, tuple[Model, list[Model]]] = {}
"""The stages of the splits last cut, by model and cut (a model is immutable, and is
held here so that its id names it while it is): a search cuts one way many times."""

MEMO_SIZE = 64
"""Cuts the memo holds before it forgets the oldest."""


def stage_models(model: Model, s: Split) -> list[Model]:
    """Each pipeline stage's device, first to last: its layers (``stage_layers``), the
    input table on the first, the output head and final normalisation on the last."""
    key = (id(model), s.tp, s.pp, s.ep, s.copies_per_expert_group, s.stage_layers,
           s.redundant_experts)
    if key not in _MEMO:
        if len(_MEMO) >= MEMO_SIZE:
            del _MEMO[next(iter(_MEMO))]
        _MEMO[key] = (model, _stage_models(model, s))
    return list(_MEMO[key][1])


def _stage_models(model: Model, s: Split) -> list[Model]:
    whole = device_model(model, s)
    if s.pp == 1:
        return [whole]
    lay, out, start = whole.layout, [], 0
    for i, n in enumerate(stage_layers(model, s)):
        first, last = i == 0, i == s.pp - 1
        layout = dataclasses.replace(
            lay,
            blocks=lay.blocks[start:start + n],
            vocab=lay.vocab if first or last else 0,
            tied=True,  # one table on each end stage
            head=last,
            final_norm=lay.final_norm if last else 0,
            head_bias=lay.head_bias and last,
            positions=lay.positions if first else 0,
            embedding_norm=lay.embedding_norm if first else 0,
            embedding_width=lay.embedding_width if first or last else None,
        )
        out.append(dataclasses.replace(whole, layout=layout))
        start += n
    return out


def expert_layers(model: Model) -> tuple[int, int]:
    """Mixture-of-experts layers of a model (or stage) and the experts a token
    picks."""
    ex = [b.ffn for b in model.layout.blocks if isinstance(b.ffn, Experts)]
    return len(ex), (ex[0].per_token if ex else 0)
