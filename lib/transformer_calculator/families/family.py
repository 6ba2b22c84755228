"""One model family's layout, as ``transformers`` builds it from a config."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..anatomy.feedforward import Experts, FeedForward, FeedForwardPart
from ..anatomy.layout import Block, Layout
from ..anatomy.mixers import Attention, LatentAttention
from .parts import NORM_NAMES, NORM_NUMBERS, Flag, QKNorm, resolve
from .reader import MAX_LAYERS, Reader, short
from .rules_attention import Windows, head_dim_from_field, kv_from_field
from .rules_experts import Ffns
from .rules_sparse import sparse_latent
from .rules_layers import Mixers, width_field

__all__ = ["LLAMA_NAMES", "GPT2_NAMES", "Family"]

LLAMA_NAMES = {
    "layers": ("num_hidden_layers",),
    "width": ("hidden_size",),
    "heads": ("num_attention_heads",),
}
GPT2_NAMES = {
    "layers": ("n_layer", "num_hidden_layers"),
    "width": ("n_embd", "hidden_size"),
    "heads": ("n_head", "num_attention_heads"),
}


_ATTENTION_FIELDS = {
    "num_key_value_heads", "num_attention_heads", "head_dim", "attention_bias",
    "sliding_window", "layer_types",
}
"""Fields only attention layers read."""


@dataclass(frozen=True)
class Family:
    """One model family's layout, as ``transformers`` builds it from a config.

    Sizes are read from ``names`` (the family's own field names first). Each part is a
    constant, a ``Flag`` (a config field with the family's default) or a named rule:

    - attention: ``kv_heads`` and ``head_dim`` (rules), ``qkv_bias`` and ``out_bias``,
    ``qk_norm``, ``windows`` (which layers see only recent positions), ``latent``
    (DeepSeek's compressed cache), ``indexers`` (a rule: which latent layers run
    DeepSeek Sparse Attention's indexer of their own), ``out_gate`` (a gate on each
    head's output, projected beside the queries), ``stores_every_head``
    (transformers' cache copies
    keys and values out to every query head), ``sinks`` (a learned number a head),
    ``keeps_no_cache`` (transformers keeps none: it runs the whole text again for each
    token);
    - feed-forward: ``ffn_width`` (None: no feed-forward part), ``gated``, ``mlp_bias``,
      ``experts`` (which layers hold a mixture of experts), ``dense`` (a rule for a
      feed-forward part of another kind, such as RWKV's channel mix);
    - ``mixers``: which layers are running summaries (Mamba) instead of attention;
    - normalisation: ``norm`` ("rms", "layer", "scale" or "fixed", or a rule),
      ``norms_per_layer``, ``final_norm``, ``embedding_norm``, ``float32_norms``;
    - embeddings and head: ``positions`` (fields giving a learned position table's rows,
    the class default when the file leaves them out, and ``position_offset``),
    ``embedding_width`` (OPT's narrower embeddings), ``tied`` (the family's
    ``tie_word_embeddings`` default; None: the file must say), ``head_bias``;
    - ``refuse_if_true``: fields that describe a model this calculator does not count;
      ``no_count``: fields the family reads that change no count;
    - ``layout``: a rule that lays out the whole model, for a family whose layers are
      not one mixer and one feed-forward part each (LongCat-Flash)."""

    title: str
    model_types: tuple[str, ...]
    names: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: LLAMA_NAMES)
    kv_heads: Callable[[Reader, int], int] = kv_from_field()
    head_dim: Callable[[Reader, int, int], int] = head_dim_from_field()
    ffn_width: Callable[[Reader, int], int] | None = width_field("intermediate_size")
    gated: bool = True
    norm: str | Callable[[Reader], int] = "rms"
    norms_per_layer: int | Callable[[Reader], int] = 2
    final_norm: bool | Callable[[Reader], bool] = True
    qkv_bias: bool | Flag = False
    out_bias: bool | Flag = False
    mlp_bias: bool | Flag = False
    qk_norm: QKNorm | None = None
    positions: tuple[str, ...] = ()
    position_offset: int = 0
    embedding_norm: bool = False
    embedding_width: tuple[str, ...] = ()
    head_bias: bool | Flag = False
    tied: bool | None = False
    windows: Windows | None = None
    experts: Ffns | None = None
    dense: Callable[[Reader, int], FeedForwardPart] | None = None
    mixers: Mixers | None = None
    latent: bool = False
    indexers: Callable[[Reader, int], list[bool]] | None = None
    out_gate: bool = False
    stores_every_head: bool | Callable[[Reader], bool] = False
    sinks: bool = False
    float32_norms: bool = False
    keeps_no_cache: bool = False
    refuse_if_true: Mapping[str, str] = field(default_factory=dict)
    no_count: tuple[str, ...] = ()
    summary: str = ""
    layout: Callable[[Reader], Layout] | None = None

    def build(self, r: Reader) -> Layout:
        """The ``Layout`` this family builds from the config in ``r``."""
        for name, why in self.refuse_if_true.items():
            if r.cfg.get(name) not in (None, False):
                raise ValueError(f"config field {name}={short(r.cfg[name])}: {why}")
            r.read.add(name)
        r.read.update(self.no_count)  # fields the family reads that change no count
        if self.layout is not None:
            return self.layout(r)
        layers = r.whole(*self.names["layers"], maximum=MAX_LAYERS)
        width = r.whole(*self.names["width"])
        vocab = r.whole("vocab_size")
        per_channel = (
            NORM_NUMBERS[self.norm] if isinstance(self.norm, str) else self.norm(r)
        )
        norm = per_channel * width
        mixers = self.mixers(r, layers, width) if self.mixers else [None] * layers
        attention = (
            self._attention(r, layers, width)
            if any(m is None for m in mixers)
            else None
        )
        if attention is None:  # no attention layer reads these
            r.read.update(_ATTENTION_FIELDS)
        ffns = self._ffns(r, layers, width)
        norms = resolve(self.norms_per_layer, r) * norm
        blocks = tuple(
            Block(mixer=m if m is not None else attention[i], ffn=ffns[i], norms=norms)
            for i, m in enumerate(mixers)
        )
        if self.tied is None and not r.given("tie_word_embeddings"):
            raise ValueError(
                "config field tie_word_embeddings is missing: for a "
                "model_type this calculator "
                "does not know it cannot tell (families differ) whether "
                "the output head has a "
                "matrix of its own"
            )
        tied = r.flag("tie_word_embeddings", bool(self.tied))
        positions = 0
        if self.positions:
            positions = r.whole(*self.positions) + self.position_offset
        embedding_width = (
            r.whole(*self.embedding_width, default=width, why="the model's width")
            if self.embedding_width
            else None
        )
        return Layout(
            vocab=vocab,
            width=width,
            blocks=blocks,
            tied=tied,
            final_norm=norm if resolve(self.final_norm, r) else 0,
            positions=positions,
            embedding_norm=norm if self.embedding_norm else 0,
            embedding_width=embedding_width if embedding_width != width else None,
            head_bias=resolve(self.head_bias, r),
            family=self.title,
            norm_numbers=per_channel,
            float32_norms=self.float32_norms,
            norm="LayerNorm without bias"
            if self.norm == "scale"
            else NORM_NAMES[per_channel],
        )

    def _attention(
        self, r: Reader, layers: int, width: int
    ) -> list[Attention | LatentAttention]:
        heads = r.whole(*self.names["heads"])
        windows = self.windows(r, layers) if self.windows else [None] * layers
        if self.latent:
            # q_lora_rank: null means queries straight from the model's width; left out,
            # 1,536
            q_rank = (
                None
                if r.cfg.get("q_lora_rank", 0) is None
                else r.whole("q_lora_rank", default=1536)
            )
            part = LatentAttention(
                width=width,
                heads=heads,
                kv_rank=r.whole("kv_lora_rank", default=512),
                q_rank=q_rank,
                nope_dim=r.whole("qk_nope_head_dim", default=128),
                rope_dim=r.whole("qk_rope_head_dim", default=64),
                v_dim=r.whole("v_head_dim", default=128),
                bias=r.flag("attention_bias", False),
            )
            # transformers does not use them for latent attention
            r.read.update({"num_key_value_heads", "head_dim", "qk_head_dim"})
            if self.indexers is None:
                return [part] * layers
            return sparse_latent(r, part, self.indexers(r, layers))
        kv = self.kv_heads(r, heads)
        if kv > heads or heads % kv:
            raise ValueError(
                f"config field num_key_value_heads={kv} does not divide "
                f"num_attention_heads={heads}"
            )
        head_dim = self.head_dim(r, width, heads)
        qk = self.qk_norm.numbers(r, heads, kv, head_dim) if self.qk_norm else 0
        stored = heads if resolve(self.stores_every_head, r) and kv != heads else None
        stored = 0 if self.keeps_no_cache else stored
        qkv_bias, out_bias = resolve(self.qkv_bias, r), resolve(self.out_bias, r)
        return [
            Attention(
                width=width,
                heads=heads,
                kv_heads=kv,
                head_dim=head_dim,
                qkv_bias=qkv_bias,
                out_bias=out_bias,
                qk_norm=qk,
                window=w,
                stored_kv_heads=stored,
                sinks=self.sinks,
                out_gate=self.out_gate,
            )
            for w in windows
        ]

    def _ffns(
        self, r: Reader, layers: int, width: int
    ) -> list[FeedForwardPart | None]:
        if self.ffn_width is None:
            return [None] * layers
        experts = self.experts(r, layers, width) if self.experts else [None] * layers
        dense = None
        r.read.add("intermediate_size")  # the width of dense layers, when there are any
        if any(e is None for e in experts) and self.dense is not None:
            dense = self.dense(r, width)
        elif any(e is None for e in experts):
            dense = FeedForward(
                width,
                self.ffn_width(r, width),
                gated=self.gated,
                bias=resolve(self.mlp_bias, r),
            )
        return [e if e is not None else dense for e in experts]
