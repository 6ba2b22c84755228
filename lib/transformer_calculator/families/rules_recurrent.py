"""Rules for the layers of families whose running summaries are not Mamba's: RWKV,
RecurrentGemma, xLSTM and MiniMax's lightning attention. Each rule says in its
docstring which ``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

from ..recurrent import RwkvChannelMix, RwkvTimeMix
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
