"""Context parallel: one long sequence cut into N_cp pieces, attention passed round a
ring.

Everything in a layer but attention treats each position on its own, so a sequence can
be cut into N_cp pieces of n / N_cp positions, one a device. Attention needs every
earlier key and value. Ring attention (Liu, Zaharia and Abbeel, 2023) keeps each
device's queries where they are and passes the pieces of keys and values round a ring:
in each of N_cp - 1 steps a device sends the keys and values it holds to the next device
while it works out its queries against them, with the running maximum and sum of
blockwise attention, so the result is exact. The passing hides under the arithmetic when
a step's work on one piece pair takes longer than sending one piece.

Under the causal mask the device with the first piece has one piece pair to work on and
the device with the last has N_cp; cutting the sequence into 2 N_cp pieces and giving
device i pieces i and 2 N_cp - 1 - i evens the work out (the zigzag order, which Llama 3
and Megatron-LM use). Then every step of the ring does exactly half of a whole piece
pair's work, so it takes pieces twice as long to hide the ring. The backward pass sends
the keys and values round again with their gradients dK and dV (ring-flash-attention
keeps the queries' gradients at home), for about two and a half times the forward
work. Llama 3 gathers the keys and values with one all-gather instead of passing them
round, which sends the same bytes but cannot hide under the work.
"""

from __future__ import annotations

from .checks import checked_whole
from .collectives import Link
from .memory import kv_bytes_per_token
from .search import first_true
from .shapes import Accelerator, ModelShape

__all__ = [
    "piece_bytes",
    "ring_attention_bytes",
    "ring_attention_step_times",
    "ring_attention_hidden_from",
    "causal_piece_pairs",
    "BACKWARD_WORK",
    "all_gather_attention_times",
]

BACKWARD_WORK = 2.5
"""The backward pass of blockwise attention over its forward pass: the scores again,
then the gradients of the values, of the scores, of the queries and of the keys, five
products against two."""


def _piece(seq_len: int, devices: int) -> tuple[int, int]:
    """Positions a device holds and the devices, if ``seq_len`` divides among them."""
    n = checked_whole("seq_len", seq_len, minimum=1)
    d = checked_whole("devices", devices, minimum=1)
    if n % d:
        raise ValueError(f"seq_len={n} does not divide among devices={d}")
    return n // d, d


def piece_bytes(m: ModelShape, tokens: int) -> int:
    """Bytes of one layer's keys and values for ``tokens`` positions: what one step of
    the ring sends (a layer's share of ``memory.kv_bytes_per_token`` for each)."""
    tokens = checked_whole("tokens", tokens)
    return tokens * kv_bytes_per_token(m) // m.layers


def ring_attention_bytes(m: ModelShape, seq_len: int, devices: int) -> int:
    """Bytes each device sends for one layer's attention in the forward pass: its
    N_cp - 1 passes of one piece of keys and values."""
    piece, d = _piece(seq_len, devices)
    return (d - 1) * piece_bytes(m, piece)


def ring_attention_step_times(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    seq_len: int,
    devices: int,
    zigzag: bool = False,
    backward: bool = False,
    gradient_bytes: int | None = None,
) -> dict[str, float]:
    """Seconds of one ring step of one layer: the arithmetic of one device's queries
    against one piece of keys and values (4 operations per pair per channel for a whole
    piece pair; half that under the causal mask in the zigzag order; times
    ``BACKWARD_WORK`` in the backward pass), and sending one piece over ``link`` (with
    its gradients dK and dV at ``gradient_bytes`` a number in the backward pass)."""
    piece, _ = _piece(seq_len, devices)
    work = 4 * piece * piece * m.heads * m.head_dim
    if zigzag:
        work //= 2
    sent = piece_bytes(m, piece)
    if backward:
        work *= BACKWARD_WORK
        g = m.bytes_per_number if gradient_bytes is None else gradient_bytes
        sent += sent * g // m.bytes_per_number
    return {
        "arithmetic": work / acc.flops_per_s,
        "sending": link.step_latency_s + sent / link.bytes_per_s,
    }


def ring_attention_hidden_from(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    zigzag: bool = False,
    backward: bool = False,
    gradient_bytes: int | None = None,
) -> int:
    """The fewest positions a device can hold for one ring step's arithmetic to last as
    long as sending its piece of keys and values (and, backward, their gradients)."""

    def hidden(piece: int) -> bool:
        times = ring_attention_step_times(m, acc, link, piece, 1, zigzag, backward,
                                          gradient_bytes)
        return times["arithmetic"] >= times["sending"]

    found = first_true(hidden)
    assert found is not None  # the arithmetic grows as the square, the sending linearly
    return found


def causal_piece_pairs(devices: int, zigzag: bool = False) -> list[int]:
    """Piece pairs each device works on under the causal mask, whole pieces counted as
    one and the diagonal ones too: device i of contiguous pieces has i + 1; with the
    zigzag order (2 N_cp pieces, device i holds pieces i and 2 N_cp - 1 - i) every
    device has the same count, 2 N_cp + 1, in pairs of half-size pieces (a quarter of
    a whole piece pair each)."""
    d = checked_whole("devices", devices, minimum=1)
    if not zigzag:
        return [i + 1 for i in range(d)]
    return [(i + 1) + (2 * d - i) for i in range(d)]


def all_gather_attention_times(
    m: ModelShape, acc: Accelerator, link: Link, seq_len: int, devices: int
) -> dict[str, float]:
    """Seconds one layer's forward attention spends on each of ``devices`` when the keys
    and values are all-gathered first (Llama 3's context parallelism): the all-gather of
    the sequence's keys and values, (N_cp - 1) pieces through each device's link, and
    the device's causal work, its two zigzag pieces' queries against every earlier
    key."""
    piece, d = _piece(seq_len, devices)
    gathered = (d - 1) * piece_bytes(m, piece)
    gather = (d - 1) * link.step_latency_s + gathered / link.bytes_per_s
    work = 4 * piece * piece * m.heads * m.head_dim * d / 2  # half of every pair
    return {"all-gather": gather, "arithmetic": work / acc.flops_per_s}
