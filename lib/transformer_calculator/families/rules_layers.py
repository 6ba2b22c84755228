"""Rules for the other parts of a layer: which layers are running summaries (Mamba)
instead of attention, how many normalisations a block has and how wide the feed-forward
part is (experts: ``rules_experts.py``). Each rule says in its docstring which
``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..anatomy.mixers import Mamba
from ..anatomy.recurrent import Mamba2
from .reader import Reader, short, whole_field


def index_list(r: Reader, name: str, layers: int) -> set[int]:
    """The layer numbers config field ``name`` lists (none when absent)."""
    found = r.raw((name,))
    if found is None:
        return set()
    value = found[1]
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < layers
        for v in value
    ):
        raise ValueError(
            f"config field {name} must list layer numbers from 0 to "
            f"{layers - 1}, "
            f"got {short(value)}"
        )
    return set(value)


def _rank(r: Reader, name: str, width: int) -> int:
    """A step-size projection's width: config field ``name``, or ceil(width / 16) when
    it is absent or "auto"."""
    found = r.raw((name,))
    if found is None or found[1] == "auto":
        return math.ceil(width / 16)
    return whole_field(*found)


# --- running-summary (state-space) layers --------------------------------------

Mixers = Callable[[Reader, int, int], list[Mamba | Mamba2 | None]]


def _mamba_jamba(r: Reader, width: int) -> Mamba:
    return Mamba(
        width=width,
        inner=r.whole("mamba_expand", default=2) * width,
        state_size=r.whole("mamba_d_state", default=16),
        conv=r.whole("mamba_d_conv", default=4),
        dt_rank=_rank(r, "mamba_dt_rank", width),
        conv_bias=r.flag("mamba_conv_bias", True),
        proj_bias=r.flag("mamba_proj_bias", False),
        inner_norms=True,
    )


def mixers_jamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Jamba: layer i is attention when i % ``attn_layer_period`` (default 8) equals
    ``attn_layer_offset`` (default 4), a Mamba mixer otherwise."""
    period = r.whole("attn_layer_period", default=8)
    offset = r.whole("attn_layer_offset", default=4, minimum=0)
    if offset >= period:
        raise ValueError(
            f"config field attn_layer_offset={offset} must be smaller "
            f"than attn_layer_period={period}"
        )
    mamba = _mamba_jamba(r, width)
    return [None if i % period == offset else mamba for i in range(layers)]


def _mamba2_bamba(r: Reader, width: int) -> Mamba2:
    """A Mamba-2 mixer read from ``mamba_*`` fields (``BambaMixer``,
    ``GraniteMoeHybridMambaLayer``): ``mamba_n_heads`` heads of ``mamba_d_head``
    channels ("auto": ``mamba_expand * hidden_size / mamba_n_heads``)."""
    expand = r.whole("mamba_expand", default=2)
    inner = expand * width
    heads = r.whole("mamba_n_heads", default=128)
    head = r.raw(("mamba_d_head",))
    head_dim = (
        inner // heads if head is None or head[1] == "auto" else whole_field(*head)
    )
    if head_dim * heads != inner:
        raise ValueError(
            f"config fields mamba_n_heads={heads} and "
            f"mamba_d_head={head_dim} do not make "
            f"mamba_expand * hidden_size = {inner:,} channels"
        )
    groups = r.whole("mamba_n_groups", default=1)
    if heads % groups:
        raise ValueError(
            f"config field mamba_n_groups={groups} does not divide "
            f"mamba_n_heads={heads}"
        )
    return Mamba2(
        width=width,
        inner=inner,
        heads=heads,
        head_dim=head_dim,
        groups=groups,
        state_size=r.whole("mamba_d_state", default=256),
        conv=r.whole("mamba_d_conv", default=4),
        conv_bias=r.flag("mamba_conv_bias", True),
        proj_bias=r.flag("mamba_proj_bias", False),
    )


def mixers_bamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Bamba: the layers listed in ``attn_layer_indices`` are attention, the others
    Mamba-2 mixers of ``mamba_n_heads`` heads (``BambaMixer``)."""
    attention = index_list(r, "attn_layer_indices", layers)
    mixer = _mamba2_bamba(r, width)
    return [None if i in attention else mixer for i in range(layers)]


_MAMBA_NAMES = ("linear_attention", "mamba")
_ATTENTION_NAMES = ("full_attention", "attention")


def mixers_granite_hybrid(
    r: Reader, layers: int, width: int
) -> list[Mamba | Mamba2 | None]:
    """Granite 4.0 hybrid (``GraniteMoeHybridDecoderLayer``): ``layer_types`` (or its
    alias ``layers_block_type``; "mamba" and "attention" are read as transformers
    renames them) names each layer; a Mamba-2 mixer (Bamba's) where it says
    ``linear_attention``, attention elsewhere; left out, every layer is Mamba-2."""
    allowed = _MAMBA_NAMES + _ATTENTION_NAMES
    types = r.layer_list("layer_types", layers, allowed, aliases=("layers_block_type",))
    types = types or ["linear_attention"] * layers
    mixer = _mamba2_bamba(r, width)
    return [mixer if t in _MAMBA_NAMES else None for t in types]


def mixers_mamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Mamba: every layer is a Mamba mixer of ``expand * hidden_size`` channels
    (``MambaMixer``)."""
    r.read.add("intermediate_size")  # transformers sets it to expand * hidden_size
    mixer = Mamba(
        width=width,
        inner=r.whole("expand", default=2) * width,
        state_size=r.whole("state_size", default=16),
        conv=r.whole("conv_kernel", default=4),
        dt_rank=_rank(r, "time_step_rank", width),
        conv_bias=r.flag("use_conv_bias", True),
        proj_bias=r.flag("use_bias", False),
    )
    return [mixer] * layers


def mixers_mamba2(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Mamba-2 (``Mamba2Mixer``): every layer is a Mamba-2 mixer of ``num_heads`` heads
    of ``head_dim`` channels, ``expand * hidden_size`` in all, B and C in ``n_groups``
    groups of ``state_size`` (``time_step_rank`` is not used)."""
    r.read.update({"intermediate_size", "time_step_rank"})
    inner = r.whole("expand", default=2) * width
    heads = r.whole("num_heads", default=128)
    head_dim = r.whole("head_dim", default=64)
    groups = r.whole("n_groups", default=8)
    if heads * head_dim != inner or heads % groups:
        raise ValueError(
            f"config fields num_heads={heads}, head_dim={head_dim} and "
            f"n_groups={groups} "
            f"do not make expand * hidden_size = {inner:,} channels in whole groups"
        )
    mixer = Mamba2(
        width=width, inner=inner, heads=heads, head_dim=head_dim, groups=groups,
        state_size=r.whole("state_size", default=128),
        conv=r.whole("conv_kernel", default=4),
        conv_bias=r.flag("use_conv_bias", True), proj_bias=r.flag("use_bias", False),
    )
    return [mixer] * layers


# --- normalisations and widths --------------------------------------------------------


def norms_falcon(r: Reader) -> int:
    """Falcon (``FalconDecoderLayer``): two norms, except with ``parallel_attn``
    (default true), where there is one unless ``num_ln_in_parallel_attn`` is 2 (the
    default for the new decoder architecture)."""
    new = r.flag("new_decoder_architecture", False)
    if not r.flag("parallel_attn", True):
        r.read.add("num_ln_in_parallel_attn")  # only used with parallel attention
        return 2
    n = r.whole(
        "num_ln_in_parallel_attn",
        default=2 if new else 1,
        why="2 with the new decoder architecture, 1 otherwise",
    )
    if n not in (1, 2):
        raise ValueError(
            f"config field num_ln_in_parallel_attn must be 1 or 2, got {n}"
        )
    return n


def norms_parallel_flag(r: Reader) -> int:
    """StableLM: one norm with ``use_parallel_residual`` (default false), two
    otherwise."""
    return 1 if r.flag("use_parallel_residual", False) else 2


def norm_opt(r: Reader) -> int:
    """OPT: LayerNorm with a scale and a bias, or none if
    ``layer_norm_elementwise_affine`` is false."""
    return 2 if r.flag("layer_norm_elementwise_affine", True) else 0


def final_norm_opt(r: Reader) -> bool:
    """OPT: a final norm only with ``do_layer_norm_before`` (default true) and without
    the old ``_remove_final_layer_norm``."""
    return r.flag("do_layer_norm_before", True) and not r.flag(
        "_remove_final_layer_norm", False
    )


def width_field(*names: str, four_times: bool = False) -> Callable[[Reader, int], int]:
    """The feed-forward width from ``names``; with ``four_times``, absent or null means
    4 x the width."""

    def rule(r: Reader, width: int) -> int:
        if four_times and not r.given(*names):
            r.notes.append(
                f"{names[0]} not given or null: using four times "
                f"hidden_size = {4 * width:,} "
                f"(the {r.title} rule)"
            )
            return 4 * width
        return r.whole(*names)

    return rule


def width_four_times(r: Reader, width: int) -> int:
    """BLOOM: the feed-forward width is always four times the model's width."""
    return 4 * width
