"""A plain PyTorch decoder built to a ``ModelShape``: the independent reference for the
arithmetic.

It is written in the spirit of nanoGPT's ``model.py``: short, readable, no tricks.
The tests count its parameters with torch and read the bytes its key-value cache
really holds, and compare both with the formulas in ``memory``. Nothing here is
trained and no weights are ever loaded from anywhere.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..shapes import ModelShape

__all__ = ["Decoder", "KVCache", "StaticCache", "StaticSlot", "cache_bytes"]

KVCache = list[tuple[torch.Tensor, torch.Tensor]]
"""One (keys, values) pair per layer, each of shape (batch, kv_heads, tokens,
head_dim)."""


class StaticCache:
    """A key-value cache written into buffers allocated once, the way serving software
    keeps it.

    ``length`` counts the tokens already stored; each forward pass writes the new keys
    and values after them instead of copying the whole cache into a longer tensor."""

    def __init__(
        self,
        m: ModelShape,
        max_tokens: int,
        batch: int = 1,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        shape = (batch, m.kv_heads, max_tokens, m.head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype) for _ in range(m.layers)]
        self.values = [torch.zeros(shape, dtype=dtype) for _ in range(m.layers)]
        self.length = 0

    @property
    def max_tokens(self) -> int:
        return self.keys[0].shape[2]

    def layer(self, i: int) -> "StaticSlot":
        """Layer ``i``'s buffers, to be written after the ``length`` tokens already
        stored."""
        return StaticSlot(self.keys[i], self.values[i], self.length)


class StaticSlot:
    """One layer's share of a ``StaticCache``: its key and value buffers and where to
    write next."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, start: int) -> None:
        self.keys, self.values, self.start = keys, values, start

    def extend(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write ``k`` and ``v`` in place after the stored tokens; return every stored
        key and value."""
        end = self.start + k.shape[2]
        if end > self.keys.shape[2]:
            raise ValueError(
                f"the static cache holds {self.keys.shape[2]} tokens; {end} needed"
            )
        self.keys[:, :, self.start : end], self.values[:, :, self.start : end] = k, v
        return self.keys[:, :, :end], self.values[:, :, :end]


def _norm(m: ModelShape) -> nn.Module:
    return nn.LayerNorm(m.width) if m.norm_bias else nn.RMSNorm(m.width)


class Attention(nn.Module):
    """Causal self-attention with ``kv_heads`` key-value heads shared by groups of query
    heads."""

    def __init__(self, m: ModelShape) -> None:
        super().__init__()
        self.m = m
        self.q = nn.Linear(m.width, m.heads * m.head_dim, bias=False)
        self.k = nn.Linear(m.width, m.kv_heads * m.head_dim, bias=False)
        self.v = nn.Linear(m.width, m.kv_heads * m.head_dim, bias=False)
        self.out = nn.Linear(m.heads * m.head_dim, m.width, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | StaticSlot | None = None,
    ):
        """The attended output for ``x``, and the keys and values attention read: the
        layer's past (joined onto a copy for a (keys, values) pair, written in place for
        a ``StaticSlot``) followed by those of ``x``."""
        b, t, _ = x.shape
        m = self.m
        q = self.q(x).view(b, t, m.heads, m.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, m.kv_heads, m.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, m.kv_heads, m.head_dim).transpose(1, 2)
        if isinstance(past, StaticSlot):
            k, v = past.extend(k, v)
        elif past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        # With a cache, the t new queries sit at the end of the row and may read
        # everything
        # before them; without one, the usual causal mask applies.
        causal = past is None and t > 1
        mask = None
        if past is not None and t > 1:
            total = k.shape[2]
            mask = torch.ones(t, total, dtype=torch.bool).tril(diagonal=total - t)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=m.kv_heads != m.heads
        )
        return self.out(y.transpose(1, 2).reshape(b, t, m.heads * m.head_dim)), (k, v)


class FeedForward(nn.Module):
    """Two matrices with a GELU between, or three (gate, up, down) with SiLU when
    gated."""

    def __init__(self, m: ModelShape) -> None:
        super().__init__()
        self.gated = m.gated_ffn
        self.up = nn.Linear(m.width, m.ffn_width, bias=False)
        self.gate = nn.Linear(m.width, m.ffn_width, bias=False) if m.gated_ffn else None
        self.down = nn.Linear(m.ffn_width, m.width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.gate(x)) * self.up(x) if self.gated else F.gelu(self.up(x))
        return self.down(h)


class Block(nn.Module):
    """Normalise, attend, add; normalise, feed forward, add."""

    def __init__(self, m: ModelShape) -> None:
        super().__init__()
        self.norm1, self.attn = _norm(m), Attention(m)
        self.norm2, self.ffn = _norm(m), FeedForward(m)

    def forward(self, x, past=None):
        a, kv = self.attn(self.norm1(x), past)
        x = x + a
        return x + self.ffn(self.norm2(x)), kv


class Decoder(nn.Module):
    """Token embeddings, ``layers`` blocks, a final norm and the output head (tied if
    the shape says so)."""

    def __init__(self, m: ModelShape) -> None:
        super().__init__()
        self.m = m
        self.embed = nn.Embedding(m.vocab, m.width)
        self.blocks = nn.ModuleList(Block(m) for _ in range(m.layers))
        self.norm = _norm(m)
        self.head = nn.Linear(m.width, m.vocab, bias=False)
        if m.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor, cache: KVCache | StaticCache | None = None):
        """Logits for every position of ``tokens``, and the cache extended by them.

        A list cache grows by joining tensors (simple, but it copies the whole cache
        each step); a ``StaticCache`` is written in place and returned as it is."""
        x = self.embed(tokens)
        if isinstance(cache, StaticCache):
            for i, block in enumerate(self.blocks):
                x, _ = block(x, cache.layer(i))
            cache.length += tokens.shape[1]
            return self.head(self.norm(x)), cache
        new_cache: KVCache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.head(self.norm(x)), new_cache

    @torch.no_grad()
    def generate(
        self, prompt: torch.Tensor, new_tokens: int
    ) -> tuple[torch.Tensor, KVCache]:
        """Greedy decoding, one token a step, reusing the cache; returns the row and the
        final cache."""
        logits, cache = self(prompt)
        row = prompt
        for _ in range(new_tokens):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            row = torch.cat([row, nxt], dim=1)
            logits, cache = self(nxt, cache)
        return row, cache


def cache_bytes(cache: KVCache) -> int:
    """Bytes the tensors of a real cache occupy."""
    return sum(
        k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in cache
    )
