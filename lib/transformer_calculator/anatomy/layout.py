"""The exact parts of a published decoder, layer by layer, and what they hold and cost.

A ``Layout`` lists every part a model family builds (biases, learned position tables,
the normalisations, the kind of mixing in each layer, experts), one ``Block`` per layer,
so that every count is a sum over what is really there:

- ``parameters``: every trainable number (tied matrices once);
- ``active_parameters``: the numbers one token's step multiplies (only the experts the
  router picks, plus everything outside the experts);
- the cache: what each layer keeps per token and for how many tokens (``mixers.py``),
  and the fixed state of running-summary layers.

Counts are in numbers; the byte figures take ``bytes_per_number`` and keep the two
exceptions ``transformers`` makes: a running summary's recurrent state and DeepSeek's
router weights are held in float32 (4 bytes) whatever the model's format.
``families/`` builds a ``Layout`` from a ``config.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

from transformer_arithmetic.search import first_true, last_true

from .feedforward import Experts, FeedForwardPart
from .mixers import Mixer, MixerKind

__all__ = ["FLOAT32_BYTES", "Block", "Layout"]

FLOAT32_BYTES = 4
"""Bytes of one float32 number: recurrent states and DeepSeek's router are kept at this
size."""


def _bias(present: bool, size: int) -> int:
    return size if present else 0


@dataclass(frozen=True)
class Block:
    """One layer: a mixer, a feed-forward part (None for Mamba's blocks, which have
    none), and ``norms`` numbers of normalisation (scales and biases of every norm in
    the block); ``passes``: times a token runs through it (more than 1 for a looped
    layer, whose weights are held once and multiplied once a pass)."""

    mixer: Mixer
    ffn: FeedForwardPart | None
    norms: int
    passes: int = 1

    @cached_property
    def parameters(self) -> int:
        """Every trainable number in the block, a count."""
        return (
            self.mixer.parameters
            + (self.ffn.parameters if self.ffn else 0)
            + self.norms
        )

    @property
    def active_parameters(self) -> int:
        """Numbers one token's step multiplies in this block, a count."""
        ffn = self.ffn.active_parameters if self.ffn else 0
        return self.mixer.active_parameters + ffn + self.norms

    @property
    def work_parameters(self) -> int:
        """Numbers one token multiplies in this block, once a pass, a count."""
        return self.passes * self.active_parameters

    def read_parameters(self, tokens: int) -> float:
        """Numbers a step carrying ``tokens`` tokens is expected to read from this
        block (again on each pass)."""
        ffn = self.ffn.read_parameters(tokens) if self.ffn else 0.0
        mixer = self.mixer.read_parameters(tokens)
        return self.passes * (mixer + ffn + self.norms)

    @property
    def float32_parameters(self) -> int:
        """Numbers of this block held in float32 (DeepSeek's routers)."""
        return self.ffn.float32_parameters if self.ffn else 0

    @property
    def windowed(self) -> bool:
        """True for attention over a window of recent positions."""
        return (
            self.mixer.kind is MixerKind.ATTENTION and self.mixer.cache_cap is not None
        )

    def cache_numbers_at(self, tokens: int) -> int:
        """Numbers this layer's key-value cache holds after ``tokens`` tokens."""
        return self.mixer.kept_tokens(tokens) * self.mixer.cache_numbers

    def state_bytes(self, bytes_per_number: int) -> int:
        """Bytes of fixed state this layer holds, whatever the length (0 for
        attention)."""
        return self.mixer.state.bytes(bytes_per_number)


@dataclass(frozen=True)
class Layout:
    """Every part of a decoder: token embeddings, an optional learned position table
    (``positions`` rows, 0 for none), an optional normalisation right after the
    embeddings (``embedding_norm`` numbers), the blocks, the final normalisation
    (``final_norm`` numbers) and the output head (its own matrix unless ``tied``, with a
    bias if ``head_bias``). ``norm_numbers`` is the numbers per channel of one
    normalisation (2 for LayerNorm, 1 for RMSNorm or a LayerNorm without bias, 0 for one
    without trainable numbers) and ``norm`` its name.

    ``embedding_width`` differs from ``width`` only for OPT's small models, whose
    embeddings are narrower and projected in and out of the blocks (None: the same).
    ``head`` is False for a pipeline's first stage without the output head, whose one
    table is the input table (``splits``).
    ``float32_norms``: every normalisation is held in float32 (gpt-oss)."""

    vocab: int
    width: int
    blocks: tuple[Block, ...]
    tied: bool
    final_norm: int
    norm_numbers: int
    norm: str
    positions: int = 0
    embedding_norm: int = 0
    embedding_width: int | None = None
    head_bias: bool = False
    family: str = "decoder"
    head: bool = True
    float32_norms: bool = False

    def __hash__(self) -> int:  # a layout is hashed often (caches): once is enough
        return self._hash

    @cached_property
    def block_counts(self) -> tuple[tuple[Block, int], ...]:
        """Each distinct block with how many times the layout holds it, in the order
        they first appear: a count summed over the blocks is a sum over these, each
        times its number (whole numbers, so the sums are the same)."""
        counts: dict[Block, int] = {}
        for b in self.blocks:
            counts[b] = counts.get(b, 0) + 1
        return tuple(counts.items())

    @cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in fields(self)))

    # --- parameters -------------------------------------------------------------------

    @cached_property
    def outside_blocks(self) -> int:
        """Numbers outside the blocks: embeddings, head, position table, outer norms."""
        e = self.embedding_width or self.width
        embeddings = self.vocab * e * (1 if self.tied else 2)
        projections = 2 * self.width * e if e != self.width else 0
        return (
            embeddings
            + projections
            + self.positions * self.width
            + self.embedding_norm
            + self.final_norm
            + _bias(self.head_bias, self.vocab)
        )

    @cached_property
    def looked_up(self) -> int:
        """Numbers of the tables a token is looked up in rather than multiplied by:
        the input table (unless it is also the output head, tied) and a position
        table."""
        e = self.embedding_width or self.width
        table = self.vocab * e if (not self.tied or not self.head) else 0
        return table + self.positions * self.width

    @cached_property
    def parameters(self) -> int:
        """Every trainable number, tied matrices counted once."""
        return self.outside_blocks + sum(b.parameters for b in self.blocks)

    @cached_property
    def active_parameters(self) -> int:
        """Numbers one token's step uses: all but the experts the router does not
        pick."""
        return self.outside_blocks + sum(b.active_parameters for b in self.blocks)

    @cached_property
    def work_parameters(self) -> int:
        """Numbers one token's step multiplies: the active ones, a looped layer's once
        for each pass (twice this is the step's weight operations)."""
        return self.outside_blocks + sum(b.work_parameters for b in self.blocks)

    @cached_property
    def float32_parameters(self) -> int:
        """Numbers held in float32 whatever the model's format (DeepSeek's routers,
        gpt-oss's normalisations)."""
        norms = (
            sum(b.norms for b in self.blocks) + self.final_norm + self.embedding_norm
            if self.float32_norms
            else 0
        )
        return sum(b.float32_parameters for b in self.blocks) + norms

    @cached_property
    def has_experts(self) -> bool:
        """True if any layer is a mixture of experts."""
        return any(isinstance(b.ffn, Experts) for b in self.blocks)

    def weight_bytes(self, bytes_per_number: int) -> int:
        """Bytes of all the weights."""
        f32 = self.float32_parameters
        return (self.parameters - f32) * bytes_per_number + f32 * FLOAT32_BYTES

    def read_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes of weights one step reads when it carries ``tokens`` tokens at once
        (all of them for a dense model; for experts, those the tokens are expected to
        touch)."""
        if not self.has_experts and all(b.passes == 1 for b in self.blocks):
            return self.weight_bytes(bytes_per_number)
        f32 = self.float32_parameters
        numbers = self.outside_blocks + sum(
            b.read_parameters(tokens) for b in self.blocks
        )
        return round((numbers - f32) * bytes_per_number + f32 * FLOAT32_BYTES)

    # --- the cache --------------------------------------------------------------------

    def state_bytes(self, bytes_per_number: int) -> int:
        """Bytes of running-summary state a conversation holds, whatever its length."""
        return sum(n * b.state_bytes(bytes_per_number) for b, n in self.block_counts)

    def cache_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes one conversation of ``tokens`` tokens holds: keys and values (each
        windowed layer only its last ``window - 1``) plus any fixed state (none at 0
        tokens)."""
        if tokens == 0:
            return 0
        kv = sum(n * b.cache_numbers_at(tokens) for b, n in self.block_counts)
        kv *= bytes_per_number
        return kv + self.state_bytes(bytes_per_number)

    def stored_cache_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes ``transformers``' own cache holds after ``tokens`` tokens (it may keep
        more than the architecture needs)."""
        if tokens == 0:
            return 0
        numbers = sum(
            n * b.mixer.kept_tokens(tokens) * b.mixer.stored_cache_numbers
            for b, n in self.block_counts
        )
        return numbers * bytes_per_number + self.state_bytes(bytes_per_number)

    def cache_bytes_per_token(self, bytes_per_number: int) -> int:
        """Bytes each of the first tokens adds (every attention layer still growing)."""
        return sum(b.mixer.cache_numbers for b in self.blocks) * bytes_per_number

    def cache_bytes_per_token_past_windows(self, bytes_per_number: int) -> int:
        """Bytes each token adds once every window is full (only the layers whose cache
        has no cap still grow)."""
        growing = (
            b.mixer.cache_numbers for b in self.blocks if b.mixer.cache_cap is None
        )
        return sum(growing) * bytes_per_number

    @cached_property
    def longest_window(self) -> int:
        """Tokens after which every windowed layer's cache stops growing (0 without
        windows)."""
        return max((b.mixer.cache_cap for b in self.blocks if b.windowed), default=0)

    def longest_conversation(self, bytes_per_number: int, free: int) -> int | None:
        """Most tokens one conversation can hold in ``free`` bytes; None when its cache
        stops growing (every layer windowed or a running summary) and fits however long
        it gets."""
        growth = self.cache_bytes_per_token_past_windows(bytes_per_number)
        whole = self.cache_bytes(bytes_per_number, max(self.longest_window, 1))
        if growth == 0 and whole <= free:
            return None
        upper = self.longest_window + 1 + (free // growth if growth else 0)
        return last_true(lambda n: self.cache_bytes(bytes_per_number, n) <= free, upper)

    # --- work -------------------------------------------------------------------------

    def decode_pair_flops(self, context: int) -> int:
        """Operations every layer spends on pairs when one new token reads the
        ``context`` earlier ones (a windowed layer reads at most ``window - 1`` of
        them; a sparse one only the tokens it picks)."""
        return sum(n * b.mixer.decode_pair_flops(context) for b, n in self.block_counts)

    def prefill_pair_flops(self, tokens: int) -> int:
        """Operations every layer spends on the allowed pairs of a ``tokens``-long
        prompt."""
        return sum(n * b.mixer.prefill_pair_flops(tokens) for b, n in self.block_counts)

    @cached_property
    def state_flops(self) -> int:
        """Operations the running summaries spend on one more token."""
        return sum(b.mixer.state_flops for b in self.blocks)

    def pairs_pass_weights_at(self) -> int | None:
        """Shortest sequence, in tokens, at which the pair work of all layers over the
        whole sequence exceeds the work of the blocks' weights for it; None if it never
        does (no attention, or windows that cap the pair work below the weight work)."""
        weights = 2 * sum(  # a token
            b.work_parameters - b.passes * b.norms for b in self.blocks
        )
        attending = [b for b in self.blocks if b.mixer.pair_flops]
        if not attending:
            return None
        if all(b.windowed for b in attending):
            final_rate = sum(
                b.mixer.pair_flops * (b.mixer.cache_cap + 1) for b in attending
            )
            if final_rate <= weights:
                return None
        return first_true(lambda n: self.prefill_pair_flops(n) > weights * n)

    # --- in words ---------------------------------------------------------------------

    def count(self, kind: MixerKind) -> int:
        """Layers whose mixer is of ``kind``."""
        return sum(1 for b in self.blocks if b.mixer.kind is kind)

    def describe(self) -> list[str]:
        """The layers in words, one line per run of identical layers."""

        def phrase(b: Block) -> str:
            return b.mixer.describe() + (f"; {b.ffn.describe()}" if b.ffn else "")

        lines: list[str] = []
        run_start = 0
        for i in range(1, len(self.blocks) + 1):
            if i == len(self.blocks) or self.blocks[i] != self.blocks[run_start]:
                where = (
                    f"layer {run_start}"
                    if i - run_start == 1
                    else f"layers {run_start}-{i - 1}"
                )
                lines.append(f"{where}: {phrase(self.blocks[run_start])}")
                run_start = i
        if (
            len(lines) > 6
        ):  # a repeating pattern: say how many layers of each kind instead
            kinds: dict[str, int] = {}
            for b in self.blocks:
                kinds[phrase(b)] = kinds.get(phrase(b), 0) + 1
            lines = [f"{n} layers: {k}" for k, n in kinds.items()]
        return lines
