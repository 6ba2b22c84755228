"""Rules for the layers of families whose running summaries are not Mamba's: RWKV,
RecurrentGemma, xLSTM and MiniMax's lightning attention. Each rule says in its
docstring which ``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

from ..recurrent import RgLru, RwkvChannelMix, RwkvTimeMix
from ..feedforward import FeedForward
from .reader import Reader


def _or_width(r: Reader, name: str, width: int, times: int = 1) -> int:
    """Config field ``name``, or ``times`` the model's width when it is null."""
    if r.given(name):
        return r.whole(name)
    r.read.add(name)
    return times * width


def mixers_rwkv(r: Reader, layers: int, width: int) -> list:
    """RWKV (``RwkvSelfAttention``): every layer's time mix has
    ``attention_hidden_size`` channels (null: the model's width)."""
    return [RwkvTimeMix(width, _or_width(r, "attention_hidden_size", width))] * layers


def dense_rwkv(r: Reader, width: int) -> RwkvChannelMix:
    """RWKV (``RwkvFeedForward``): the channel mix widens to ``intermediate_size``
    (null: four times the model's width)."""
    return RwkvChannelMix(width, _or_width(r, "intermediate_size", width, times=4))


def _block_types(r: Reader, layers: int) -> list[str]:
    found = r.raw(("block_types",))
    value = found[1] if found else ["recurrent", "recurrent", "attention"]
    if not isinstance(value, list) or not value or not all(
        v in ("recurrent", "attention") for v in value
    ):
        raise ValueError(
            "config field block_types must list recurrent and attention blocks, got "
            f"{value!r}"[:120]
        )
    return (value * layers)[:layers]


def mixers_recurrent_gemma(r: Reader, layers: int, width: int) -> list:
    """RecurrentGemma (``RecurrentGemmaDecoderLayer``): ``block_types`` repeated over
    the layers; a recurrent block of ``lru_width`` channels (null: the model's width),
    ``num_attention_heads`` gate blocks and a filter of ``conv1d_width`` tokens, or
    local attention."""
    inner = _or_width(r, "lru_width", width)
    heads = r.whole("num_attention_heads")
    if inner % heads:
        raise ValueError(
            f"config field lru_width={inner:,} is not a multiple of "
            f"num_attention_heads={heads}"
        )
    block = RgLru(width, inner, heads, r.whole("conv1d_width"))
    return [block if t == "recurrent" else None for t in _block_types(r, layers)]


def windows_recurrent_gemma(r: Reader, layers: int) -> list[int | None]:
    """RecurrentGemma: every attention layer sees the last ``attention_window_size``
    positions (its alias ``sliding_window``)."""
    return [r.whole("attention_window_size", "sliding_window")] * layers


def dense_recurrent_gemma(r: Reader, width: int) -> FeedForward:
    """RecurrentGemma (``RecurrentGemmaMlp``): a gated feed-forward part of half of
    ``intermediate_size``, with biases."""
    return FeedForward(width, r.whole("intermediate_size") // 2, gated=True, bias=True)
