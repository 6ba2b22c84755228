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

The teaching formula ``memory.layer_activation_bytes`` is this count for the plain
decoder with dropout (a plain layout without dropout equals it without its masks). Small
per-token statistics (a normalisation's reciprocal root, a fused kernel's
log-sum-exp) and dropout masks (the models here train without dropout) are not counted.
Running-summary layers are refused: what they keep depends on the scan's kernel.
"""

from __future__ import annotations

from transformer_arithmetic.checks import checked_whole

from .feedforward import Experts, FeedForward
from .layout import FLOAT32_BYTES, Block
from .matrices import matrices_of_block
from .mixers import Attention, LatentAttention
from .model import Model

__all__ = [
    "RECOMPUTE",
    "block_activation_numbers",
    "activation_bytes",
    "logits_bytes",
    "softmax_bytes",
]

RECOMPUTE = ("none", "selective", "full")
"""What a step recomputes in its backward pass instead of keeping."""


def _norms(model: Model, block: Block) -> int:
    """Normalisations a block applies to its width (each keeps its input)."""
    layout = model.layout
    if layout.norm_numbers == 0:
        return 2
    return block.norms // (layout.norm_numbers * layout.width)


def _mixer_numbers(block: Block, seq_len: int, grid: bool) -> int:
    m = block.mixer
    if type(m) is Attention:
        q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
        qk_norm = q + kv if m.qk_norm else 0
        scores = m.heads * seq_len if grid else 0
        return m.width + q + 2 * kv + q + qk_norm + scores
    if type(m) is LatentAttention:
        qk = m.nope_dim + m.rope_dim
        query = 2 * m.q_rank if m.q_rank is not None else 0
        latent = (m.kv_rank + m.rope_dim) + m.kv_rank
        heads = m.heads * qk + m.heads * qk + m.heads * m.v_dim + m.heads * m.v_dim
        scores = m.heads * seq_len if grid else 0
        return m.width + query + latent + heads + scores
    raise ValueError(
        f"the activations a {type(m).__name__} layer keeps for training are not "
        "counted here: what a running summary keeps depends on its scan's kernel"
    )


def _ffn_numbers(block: Block) -> tuple[int, int]:
    """(numbers in the model's format, numbers in float32) the feed-forward part keeps
    a token."""
    f = block.ffn
    if f is None:
        return 0, 0
    if type(f) is FeedForward:
        return f.width + (4 if f.gated else 2) * f.inner, 0
    if type(f) is Experts:
        shared = 4 * f.shared.inner if f.shared else 0
        routed = f.per_token * (f.width + 4 * f.inner)
        return f.width + routed + shared, f.count
    raise ValueError(f"the activations of a {type(f).__name__} part are not counted")


def block_activation_numbers(
    model: Model, block: Block, seq_len: int, recompute: str, lora: int
) -> tuple[int, int]:
    """(numbers in the model's format, numbers in float32) ``block`` keeps for each
    token
    of a ``seq_len``-token sequence; ``lora``: adapter numbers a token adds (the
    product of its input and A, which B reads)."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
    if recompute == "full":
        return model.layout.width, 0
    grid = recompute == "none"
    ffn, ffn32 = _ffn_numbers(block)
    norms = _norms(model, block) * model.layout.width
    return norms + _mixer_numbers(block, seq_len, grid) + ffn + lora, ffn32


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


def activation_bytes(
    model: Model,
    batch: int,
    seq_len: int,
    recompute: str,
    lora_rank: int = 0,
    lora_names: tuple[str, ...] = (),
) -> int:
    """Bytes every layer keeps for the backward pass, plus the inputs of the final
    normalisation and of the output head, for ``batch`` sequences of ``seq_len``."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    bpn, layout = model.bytes_per_number, model.layout
    numbers = f32 = 0
    for block in layout.blocks:
        lora = _lora_numbers(block, lora_rank, lora_names)
        if recompute == "full":
            lora = 0
        n, n32 = block_activation_numbers(model, block, seq_len, recompute, lora)
        numbers += n
        f32 += n32
    outer = 2 * layout.width + (layout.width if layout.embedding_norm else 0)
    per_token = (numbers + outer) * bpn + f32 * FLOAT32_BYTES
    return batch * seq_len * per_token


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
