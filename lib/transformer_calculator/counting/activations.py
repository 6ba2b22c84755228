"""Activations one training step keeps for its backward pass, counted over the layout
after Korthikanti et al. (2022).

A layer keeps the input of every operation whose gradient needs it: each
normalisation's input, each matrix's input (shared by the matrices that read the same
vector), attention's queries, keys and values and its output, the feed-forward part's
inner vectors (two for a plain part: the activation's input and output; four for a
gated one: gate, up, the activated gate and their product), and, unless it is
recomputed, each head's grid of attention weights. In the model's format (a number of
``bytes_per_number`` bytes), per token:

- ``none``: all of it, the grid included (heads x n numbers a token of an n-token
  sequence: what eager attention keeps);
- ``selective``: the grid recomputed (Korthikanti's selective recomputation; a fused
  attention kernel never stores it either);
- ``full``: only each layer's input, the rest recomputed.

Split over devices (``Shares``): tensor parallel cuts the heads and the inner widths
(the device's own layout already holds its share); sequence parallelism (Korthikanti et
al., on by default in Megatron-LM with tensor parallel) cuts the sequence of every
d-wide tensor the layer keeps (the normalisations' inputs, the inputs of the first
matrices, a layer's input under full recomputation) over the same N_tp devices, so a
layer keeps 1 / N_tp of everything; context parallel cuts the whole sequence over N_cp
devices (each keeps n / N_cp tokens, and under the all-gather form every position's
keys and values as well, gathered for attention).

With ``fused_glu`` a gated feed-forward part's activation is one fused kernel that keeps
its input (gate and up) and recomputes the activated gate in the backward pass, as
Megatron-LM's bias-SwiGLU does: three inner vectors a token instead of four.

With ``dropout`` the step also keeps a one-byte mask a number after attention and after
the feed-forward part, and where the grid is kept, the grid's mask and dropout's output
over it (Korthikanti's count: 5 a s / h of his 34 + 5 a s / h at two bytes a number);
today's large models train without dropout, the default. The teaching formula
``memory.layer_activation_bytes`` is this count for the plain decoder (a plain layout
without dropout equals it without its masks). Small per-token statistics (a
normalisation's reciprocal root, a fused kernel's log-sum-exp) are not counted.
Running-summary layers are refused: what they keep depends on the scan's kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer_arithmetic.checks import checked_whole

from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.layout import FLOAT32_BYTES, Block
from ..anatomy.matrices import matrices_of_block
from ..anatomy.attention_kinds import SparseLatentAttention
from ..anatomy.mixers import Attention, LatentAttention
from ..anatomy.model import Model

__all__ = [
    "RECOMPUTE",
    "Shares",
    "NO_SHARES",
    "block_activation_numbers",
    "activation_bytes",
    "logits_bytes",
    "softmax_bytes",
]

RECOMPUTE = ("none", "selective", "full")
"""What a step recomputes in its backward pass instead of keeping."""


@dataclass(frozen=True)
class Shares:
    """How a split cuts the activations of one device beyond its own layout:
    ``sequence`` devices share each d-wide tensor's positions (N_tp under sequence
    parallelism, else 1), ``context`` devices share the whole sequence (N_cp), and
    ``gathered_kv`` is True when context parallel gathers every position's keys and
    values for attention (the all-gather form) and keeps them for the backward pass;
    ``gathered_inputs`` is True when the matrices that read a d-wide vector (the
    attention's and the feed-forward part's first matrices, the output head) keep
    their input as gathered over the sequence's ``sequence`` devices, whole, instead
    of their own share to gather again in the backward pass (nanotron's
    ``tp_recompute_allgather=False``; Megatron-LM gathers again): the normalisations'
    inputs stay cut. ``kv_twice`` is True when attention keeps its keys and values
    twice: nanotron's multi-head attention copies the packed queries, keys and values
    into one tensor, which the query's view (saved by flash-attention) keeps whole,
    and rotates a second copy of the keys and values, which flash-attention saves too
    (``CausalSelfAttention``, the path without grouped key-value heads)."""

    sequence: int = 1
    context: int = 1
    gathered_kv: bool = False
    gathered_inputs: bool = False
    kv_twice: bool = False

    def __post_init__(self) -> None:
        checked_whole("sequence", self.sequence, minimum=1)
        checked_whole("context", self.context, minimum=1)


NO_SHARES = Shares()
"""One device holding the whole sequence."""


def _norms(model: Model, block: Block) -> int:
    """Normalisations a block applies to its width (each keeps its input)."""
    layout = model.layout
    if layout.norm_numbers == 0:
        return 2
    return block.norms // (layout.norm_numbers * layout.width)


def _mixer_numbers(block: Block, seq_len: int, grid: bool) -> tuple[int, int]:
    """(numbers cut by heads, d-wide numbers) attention keeps a token; the grid spans
    ``seq_len`` keys."""
    m = block.mixer
    if type(m) is Attention and m.out_gate or type(m) is SparseLatentAttention:
        what = ("an attention layer with an output gate" if type(m) is Attention
                else "a sparse latent attention layer (its indexer's scores)")
        raise ValueError(f"the activations {what} keeps for training are not "
                         "counted here")
    if type(m) is Attention:
        q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
        qk_norm = q + kv if m.qk_norm else 0
        scores = m.heads * seq_len if grid else 0
        return q + 2 * kv + q + qk_norm + scores, m.width
    if type(m) is LatentAttention:
        qk = m.nope_dim + m.rope_dim
        query = 2 * m.q_rank if m.q_rank is not None else 0
        latent = (m.kv_rank + m.rope_dim) + m.kv_rank
        heads = m.heads * qk + m.heads * qk + m.heads * m.v_dim + m.heads * m.v_dim
        scores = m.heads * seq_len if grid else 0
        return query + latent + heads + scores, m.width
    raise ValueError(
        f"the activations a {type(m).__name__} layer keeps for training are not "
        "counted here: what a running summary keeps depends on its scan's kernel"
    )


def _ffn_numbers(block: Block, fused: bool) -> tuple[int, int, int]:
    """(inner numbers in the model's format, d-wide numbers, numbers in float32) the
    feed-forward part keeps a token; ``fused``: a fused gated activation."""
    f = block.ffn
    glu = 3 if fused else 4
    if f is None:
        return 0, 0, 0
    if type(f) is FeedForward:
        return (glu if f.gated else 2) * f.inner, f.width, 0
    if type(f) is Experts:
        shared = glu * f.shared.inner if f.shared else 0
        routed = f.per_token * f.tokens_from * (f.width + glu * f.inner)
        return routed + shared, f.width, f.count
    raise ValueError(f"the activations of a {type(f).__name__} part are not counted")


def _kv_numbers(block: Block) -> int:
    """Numbers of keys and values one position adds to a device's attention."""
    m = block.mixer
    if type(m) is Attention:
        return 2 * m.kv_heads * m.head_dim
    if type(m) is LatentAttention:
        return m.heads * (m.nope_dim + m.rope_dim) + m.heads * m.v_dim
    return 0


def block_activation_numbers(
    model: Model, block: Block, seq_len: int, recompute: str, lora: int,
    fused_glu: bool = False,
) -> tuple[int, int]:
    """(numbers in the model's format, numbers in float32) ``block`` keeps for each
    token of a ``seq_len``-token sequence on one device; ``lora``: adapter numbers a
    token adds (the product of its input and A, which B reads)."""
    cut, wide, f32 = _block_numbers(model, block, seq_len, recompute, lora, fused_glu)
    return cut + wide, f32


def _block_numbers(
    model: Model, block: Block, seq_len: int, recompute: str, lora: int,
    fused_glu: bool = False,
) -> tuple[int, int, int]:
    """(numbers cut by heads and inner widths, d-wide numbers, float32 numbers) a
    token keeps in ``block``."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
    if recompute == "full":
        return 0, model.layout.width, 0
    mixer, mixer_wide = _mixer_numbers(block, seq_len, recompute == "none")
    ffn, ffn_wide, ffn32 = _ffn_numbers(block, fused_glu)
    norms = _norms(model, block) * model.layout.width
    return mixer + ffn + lora, norms + mixer_wide + ffn_wide, ffn32


def _lora_numbers(block: Block, rank: int, names: tuple[str, ...]) -> int:
    """Adapter numbers a token adds in ``block``: ``rank`` for every targeted matrix."""
    if not rank:
        return 0
    own = rank * sum(m.count for m in matrices_of_block(block) if m.name in names)
    routed = (
        2 * rank * block.ffn.per_token
        if "experts" in names and isinstance(block.ffn, Experts)
        else 0
    )  # gate-and-up and down, for each expert a token uses
    return own + routed


def _mask_bytes(
    block: Block, width: int, seq_len: int, recompute: str, bpn: int
) -> tuple[int, int]:
    """(d-wide, grid) bytes dropout adds a token in ``block``: a one-byte mask after
    attention and after the feed-forward part, and where the grid is kept, its mask
    and its output (``bpn`` bytes a score) over the grid."""
    if recompute == "full":
        return 0, 0
    grid = block.mixer.heads * seq_len * (1 + bpn) if recompute == "none" else 0
    return 2 * width, grid


def activation_bytes(
    model: Model,
    batch: int,
    seq_len: int,
    recompute: str,
    lora_rank: int = 0,
    lora_names: tuple[str, ...] = (),
    *,
    shares: Shares = NO_SHARES,
    dropout: bool = False,
    fused_glu: bool = False,
) -> int:
    """Bytes every layer keeps for the backward pass, plus the inputs of the final
    normalisation and of the output head (on a layout that holds the head), for
    ``batch`` sequences of ``seq_len`` on a device whose share of the sequence is
    ``shares``, with dropout's masks and a fused gated activation as asked (see the
    module's docstring)."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    if seq_len % shares.context:
        raise ValueError(
            f"seq_len={seq_len} does not divide among {shares.context} devices"
        )
    bpn, layout = model.bytes_per_number, model.layout
    cut = wide = whole = f32 = masks = 0.0
    for block in layout.blocks:
        lora = _lora_numbers(block, lora_rank, lora_names)
        if recompute == "full":
            lora = 0
        c, w, n32 = _block_numbers(model, block, seq_len, recompute, lora, fused_glu)
        if shares.gathered_kv and recompute != "full":
            c += _kv_numbers(block) * (shares.context - 1)
        if shares.kv_twice and recompute != "full" and type(block.mixer) is Attention:
            c += _kv_numbers(block)
        if shares.gathered_inputs and recompute != "full":
            inputs = w - _norms(model, block) * layout.width  # the matrices' inputs
            w, whole = w - inputs, whole + inputs
        cut, wide, f32 = cut + c, wide + w, f32 + n32
        if dropout:
            d_wide, grid = _mask_bytes(block, layout.width, seq_len, recompute, bpn)
            masks += d_wide / shares.sequence + grid
    if layout.head:  # the final norm's input, the head's input
        wide += layout.width
        whole, wide = (whole + layout.width, wide) if shares.gathered_inputs else (
            whole, wide + layout.width)
    wide += layout.width if layout.embedding_norm else 0
    per_token = ((cut + whole + wide / shares.sequence) * bpn + f32 * FLOAT32_BYTES
                 + masks)
    return round(batch * (seq_len // shares.context) * per_token)


def logits_bytes(model: Model, batch: int, seq_len: int) -> int:
    """Bytes of the logits, the head's output the step holds until the loss is taken
    (in the model's format), for ``batch`` sequences of ``seq_len``."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    return batch * seq_len * model.layout.vocab * model.bytes_per_number


def softmax_bytes(model: Model, batch: int, seq_len: int) -> int:
    """Bytes of the float32 log-softmax of the logits the loss keeps for its backward
    pass, for ``batch`` sequences of ``seq_len``."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    return batch * seq_len * model.layout.vocab * FLOAT32_BYTES
