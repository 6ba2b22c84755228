"""The weight matrices of a layout, part by part: what a quantizer can pack.

A quantizer packs the matrices a model multiplies its tokens by (``transformers``'
``Linear``
modules, and the experts' matrices) and leaves every other number as it was: the
normalisations, biases, a running summary's filter and decay numbers. Which matrices it
packs depends on their part, so each matrix is listed with its ``role``:

- ``attention``, ``feed-forward``, ``experts``, ``summary`` (a running summary's
  projections), ``projection`` (OPT's in and out projections): packed by every scheme;
- ``router`` (the experts' router), ``shared-gate`` (the scalar gate of a shared expert,
  a linear layer in transformers), ``head`` (the output layer, unless tied) and
  ``embeddings`` (token and position tables): kept by default.

The list is read off the layout by the kind of each part; a kind it does not know is
refused, never guessed. ``tests/test_formats.py`` requires the list to equal the
``Linear`` shapes of the model ``transformers`` builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .attention_kinds import SparseLatentAttention
from .feedforward import Experts, FeedForward, FeedForwardPart
from .layout import Block, Layout
from .measured import MeasuredExperts, MeasuredMixer
from .mixers import Attention, LatentAttention, Mamba, Mixer
from .recurrent import GatedDeltaNet, Mamba2

__all__ = [
    "ROLES",
    "KEPT_BY_DEFAULT",
    "Matrix",
    "matrices",
    "matrices_of_block",
    "expert_matrices",
]

ROLES = (
    "attention",
    "feed-forward",
    "experts",
    "summary",
    "projection",
    "router",
    "shared-gate",
    "head",
    "embeddings",
)
"""Every role a matrix can have."""

KEPT_BY_DEFAULT = ("embeddings", "head", "router", "shared-gate")
"""Roles a quantized format leaves in the model's own format unless told otherwise
(normalisations, biases and every other number are never packed)."""


@dataclass(frozen=True)
class Matrix:
    """``count`` matrices of ``rows`` inputs by ``cols`` outputs, with one ``role`` and
    the ``name`` ``transformers`` gives the module (``q_proj``, ``down_proj``, ...)."""

    rows: int
    cols: int
    count: int
    role: str
    name: str = ""

    @property
    def numbers(self) -> int:
        """Weights in all ``count`` matrices."""
        return self.rows * self.cols * self.count


_MEASURED = (
    " (a model counted by the transformers route is known by its tensors' sizes, not "
    "by the roles of its matrices, so it can be counted only in its own format)"
)


def _attention(m: Attention) -> list[Matrix]:
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    return [
        Matrix(m.width, m.query_width, 1, "attention", "q_proj"),
        Matrix(m.width, kv, 1, "attention", "k_proj"),
        Matrix(m.width, kv, 1, "attention", "v_proj"),
        Matrix(q, m.width, 1, "attention", "o_proj"),
    ]


def _latent(m: LatentAttention) -> list[Matrix]:
    qk = m.nope_dim + m.rope_dim
    if m.q_rank is None:
        query = [Matrix(m.width, m.heads * qk, 1, "attention", "q_proj")]
    else:
        query = [
            Matrix(m.width, m.q_rank, 1, "attention", "q_a_proj"),
            Matrix(m.q_rank, m.heads * qk, 1, "attention", "q_b_proj"),
        ]
    return query + [
        Matrix(m.width, m.kv_rank + m.rope_dim, 1, "attention", "kv_a_proj_with_mqa"),
        Matrix(
            m.kv_rank, m.heads * (m.nope_dim + m.v_dim), 1, "attention", "kv_b_proj"
        ),
        Matrix(m.heads * m.v_dim, m.width, 1, "attention", "o_proj"),
    ]


def _mamba(m: Mamba) -> list[Matrix]:
    return [
        Matrix(m.width, 2 * m.inner, 1, "summary", "in_proj"),
        Matrix(m.inner, m.dt_rank + 2 * m.state_size, 1, "summary", "x_proj"),
        Matrix(m.dt_rank, m.inner, 1, "summary", "dt_proj"),
        Matrix(m.inner, m.width, 1, "summary", "out_proj"),
    ]


def _mamba2(m: Mamba2) -> list[Matrix]:
    projected = m.inner + m.conv_channels + m.heads
    return [
        Matrix(m.width, projected, 1, "summary", "in_proj"),
        Matrix(m.inner, m.width, 1, "summary", "out_proj"),
    ]


def _sparse_latent(m: SparseLatentAttention) -> list[Matrix]:
    indexer = [
        Matrix(m.q_rank or 0, m.index_heads * m.index_dim, 1, "attention",
               "indexer.wq_b"),
        Matrix(m.width, m.index_dim, 1, "attention", "indexer.wk"),
        Matrix(m.width, m.index_heads, 1, "attention", "indexer.weights_proj"),
    ]
    return _latent(m) + (indexer if m.own_indexer else [])


def _gated_delta(m: GatedDeltaNet) -> list[Matrix]:
    values = m.value_heads * m.value_dim
    return [
        Matrix(m.width, m.conv_channels, 1, "summary", "in_proj_qkv"),
        Matrix(m.width, values, 1, "summary", "in_proj_z"),
        Matrix(m.width, m.value_heads, 1, "summary", "in_proj_b"),
        Matrix(m.width, m.value_heads, 1, "summary", "in_proj_a"),
        Matrix(values, m.width, 1, "summary", "out_proj"),
    ]


def _mixer(m: Mixer) -> list[Matrix]:
    for kind, rule in (
        (Attention, _attention),
        (LatentAttention, _latent),
        (SparseLatentAttention, _sparse_latent),
        (Mamba, _mamba),
        (Mamba2, _mamba2),
        (GatedDeltaNet, _gated_delta),
    ):
        if type(m) is kind:
            return rule(m)
    raise ValueError(
        f"the matrices of a {type(m).__name__} layer are not known to the "
        "format counter"
        + (_MEASURED if isinstance(m, MeasuredMixer) else "")
    )


def _dense(f: FeedForward, role: str) -> list[Matrix]:
    gate = [Matrix(f.width, f.inner, 1, role, "gate_proj")] if f.gated else []
    return gate + [
        Matrix(f.width, f.inner, 1, role, "up_proj"),
        Matrix(f.inner, f.width, 1, role, "down_proj"),
    ]


def expert_matrices(e: Experts) -> list[Matrix]:
    """The matrices of one expert (gate, up, down)."""
    return [
        Matrix(e.width, e.inner, 1, "experts", "experts.gate_proj"),
        Matrix(e.width, e.inner, 1, "experts", "experts.up_proj"),
        Matrix(e.inner, e.width, 1, "experts", "experts.down_proj"),
    ]


def _ffn(f: FeedForwardPart | None) -> list[Matrix]:
    if f is None:
        return []
    if type(f) is FeedForward:
        return _dense(f, "feed-forward")
    if type(f) is Experts:
        own = [
            Matrix(m.rows, m.cols, m.count * f.count, m.role, m.name)
            for m in expert_matrices(f)
        ]
        shared = _dense(f.shared, "feed-forward") if f.shared else []
        gate = (
            [Matrix(f.width, 1, 1, "shared-gate", "shared_expert_gate")]
            if f.shared_gate
            else []
        )
        router = Matrix(f.width, f.count, 1, "router", "gate")
        return own + [router] + shared + gate
    raise ValueError(
        f"the matrices of a {type(f).__name__} part are not known to the format counter"
        + (_MEASURED if isinstance(f, MeasuredExperts) else "")
    )


def matrices_of_block(block: Block) -> list[Matrix]:
    """The weight matrices of one layer."""
    return _mixer(block.mixer) + _ffn(block.ffn)


def matrices(layout: Layout) -> list[Matrix]:
    """Every weight matrix of ``layout``, equal matrices of one name gathered into one
    entry."""
    return list(_matrices(layout))


@lru_cache(maxsize=64)
def _matrices(layout: Layout) -> tuple[Matrix, ...]:
    e = layout.embedding_width or layout.width
    found = [Matrix(layout.vocab, e, 1, "embeddings", "embed_tokens")]
    if layout.positions:
        found.append(
            Matrix(layout.positions, layout.width, 1, "embeddings", "embed_positions")
        )
    if not layout.tied:
        found.append(Matrix(e, layout.vocab, 1, "head", "lm_head"))
    if e != layout.width:
        found += [
            Matrix(e, layout.width, 1, "projection", "project_in"),
            Matrix(layout.width, e, 1, "projection", "project_out"),
        ]
    for block in layout.blocks:
        found += matrices_of_block(block)
    gathered: dict[tuple[int, int, str, str], int] = {}
    for m in found:
        key = (m.rows, m.cols, m.role, m.name)
        gathered[key] = gathered.get(key, 0) + m.count
    return tuple(
        Matrix(r, c, n, role, name) for (r, c, role, name), n in gathered.items()
    )
