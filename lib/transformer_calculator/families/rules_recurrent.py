"""Rules for the layers of families whose running summaries are not Mamba's: RWKV,
RecurrentGemma, xLSTM and MiniMax's lightning attention. Each rule says in its
docstring which ``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

from ..anatomy.recurrent import MLstm, RgLru, RwkvChannelMix, RwkvTimeMix
from ..anatomy.feedforward import FeedForward
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


def _factor(r: Reader, name: str) -> float:
    found = r.raw((name,))
    if found is None or isinstance(found[1], bool) or not isinstance(
        found[1], (int, float)
    ) or not 0 < found[1] <= 64:
        raise ValueError(f"config field {name} must be a number above 0, got "
                         f"{found[1] if found else None!r}")
    return found[1]


def _round_up(x: float, multiple: int) -> int:
    """transformers' ``round_up_to_next_multiple_of``."""
    return int(((x + multiple - 1) // multiple) * multiple)


def mixers_xlstm(r: Reader, layers: int, width: int) -> list:
    """xLSTM (``xLSTMLayer``, ``xLSTMCache``): every layer an mLSTM of
    ``num_heads`` heads, ``qk_dim_factor`` and ``v_dim_factor`` of the width for keys
    and values; the cache shapes each head's memory from those widths rounded up to a
    multiple of 64, so a width they do not round to is refused (transformers' cache
    then does not fit its layers)."""
    heads = r.whole("num_heads")
    qk = int(width * _factor(r, "qk_dim_factor"))
    v = int(width * _factor(r, "v_dim_factor"))
    if qk != _round_up(qk, 64) or v != _round_up(v, 64) or qk % heads or v % heads:
        raise ValueError(
            f"config fields hidden_size={width:,}, qk_dim_factor and v_dim_factor make "
            f"keys of {qk} and values of {v} channels, not multiples of 64 divided "
            f"among {heads} heads: transformers' xLSTM cache does not fit such layers"
        )
    r.read.update({"weight_mode", "mode", "add_out_norm"})
    mixer = MLstm(width, qk, v, heads, r.flag("use_bias", False), qk // heads,
                  v // heads)
    return [mixer] * layers


def dense_xlstm(r: Reader, width: int) -> FeedForward:
    """xLSTM (``xLSTMFeedForward``): a gated feed-forward part of ``ffn_proj_factor``
    times the width, rounded up to ``ffn_round_up_to_multiple_of``."""
    inner = _round_up(width * _factor(r, "ffn_proj_factor"),
                      r.whole("ffn_round_up_to_multiple_of"))
    return FeedForward(width, inner, gated=True, bias=r.flag("use_bias", False))


def norms_xlstm(r: Reader) -> int:
    """xLSTM (``xLSTMBlock``): two RMSNorms a block, each with a bias too when
    ``use_bias``."""
    return 4 if r.flag("use_bias", False) else 2
