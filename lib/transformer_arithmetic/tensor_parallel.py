"""Tensor parallel: each matrix of a layer cut into N_tp shares (Megatron-LM).

Shoeybi et al. (2019) cut a block so that it needs only two all-reduces in a forward
pass. In attention, each device takes h / N_tp whole heads: its columns of the query,
key and value matrices and the matching rows of the output matrix, so it computes its
heads' share of the output alone and one all-reduce adds the shares. In the feed-forward
part, the first matrix (or two, when gated) is cut by columns, so each device holds a
slice of the inner width and applies the nonlinearity to its slice alone, and the last
matrix by rows, so its product is again a share to be added by a second all-reduce.
The backward pass needs the same two all-reduces again.

Key-value heads are cut like the query heads while there are at least N_tp of them; with
fewer, each device keeps one whole key-value head (copies of it live on N_tp / h_kv
devices), so the cache per device stops shrinking at one head. The vocabulary is cut by
rows and padded to a multiple of N_tp where it does not divide (Megatron-LM pads it).

Sequence parallelism (Korthikanti et al., 2022) cuts the rest of the layer, the
normalisations and the vectors between the blocks, along the positions: each all-reduce
becomes a reduce-scatter after the row-cut matrix and an all-gather before the next
column-cut one, which send the same bytes, and each device keeps 1 / N_tp of every
activation. Cut so, each collective can run in pieces beside the matrix product it feeds
or drains (a collective matrix product, asynchronous tensor parallelism), which hides it
while the product takes longer (``tp_overlap_pairs``).
"""

from __future__ import annotations

from .checks import checked_whole
from .collectives import Link, ring_bytes_sent, ring_time
from .memory import ffn_params
from .shapes import Accelerator, ModelShape
from .timing import input_rows_bytes
from .work import layer_weight_flops

__all__ = [
    "check_split",
    "divides",
    "kv_heads_per_device",
    "vocab_rows",
    "widest_split",
    "tp_layer_numbers",
    "tp_weight_bytes",
    "tp_cache_bytes_per_token",
    "tp_handed_bytes",
    "tp_layer_bytes",
    "tp_layer_times",
    "tp_widest_hidden",
    "tp_decode_parts",
    "tp_sp_collectives",
    "tp_layer_activation_bytes",
    "tp_overlap_pairs",
    "tp_overlap_hidden",
]


def check_split(m: ModelShape, devices: int) -> int:
    """``devices`` if the heads and the feed-forward width divide among them and the
    key-value heads either divide among them or divide them (the vocabulary is padded
    to a multiple of ``devices``)."""
    n = checked_whole("devices", devices, minimum=1)
    for name, value in (("heads", m.heads), ("ffn_width", m.ffn_width)):
        if value % n:
            raise ValueError(f"{name}={value} does not divide among {n} devices")
    if m.kv_heads % n and n % m.kv_heads:
        raise ValueError(
            f"kv_heads={m.kv_heads} neither divides among {n} devices nor divides them"
        )
    return n


def divides(m: ModelShape, devices: int) -> bool:
    """Whether ``m``'s layer can be cut among ``devices`` (``check_split`` agrees)."""
    try:
        check_split(m, devices)
    except ValueError:
        return False
    return True


def widest_split(m: ModelShape, most: int) -> int:
    """The most devices, up to ``most``, among which the layer can be cut (1 always
    can)."""
    most = checked_whole("most", most, minimum=1)
    return max(n for n in range(1, most + 1) if divides(m, n))


def kv_heads_per_device(m: ModelShape, devices: int) -> int:
    """Key-value heads each device holds: h_kv / N_tp, and at least one."""
    n = check_split(m, devices)
    return max(m.kv_heads // n, 1)


def vocab_rows(m: ModelShape, devices: int) -> int:
    """Rows of the vocabulary table each of ``devices`` holds: ceil(V / N_tp), the
    table padded to a multiple of N_tp."""
    n = checked_whole("devices", devices, minimum=1)
    return -(-m.vocab // n)


def tp_layer_numbers(m: ModelShape, devices: int) -> int:
    """Numbers of one layer each device holds: its share of the four attention matrices
    (a whole key-value head where there are too few to cut) and of the feed-forward
    matrices, and both normalisations whole."""
    n = check_split(m, devices)
    kv = kv_heads_per_device(m, n)
    queries = 2 * m.width * (m.heads // n) * m.head_dim  # query and output shares
    attention = queries + 2 * m.width * kv * m.head_dim
    return attention + ffn_params(m) // n + 2 * m.norm_numbers * m.width


def tp_weight_bytes(m: ModelShape, devices: int) -> int:
    """Bytes of weights each device holds: its share of every layer, of the embedding
    table (cut by vocabulary rows, padded to a multiple of N_tp) and of an untied output
    table, and the final normalisation whole."""
    n = check_split(m, devices)
    tables = m.embedding_tables * vocab_rows(m, n) * m.width
    final = m.norm_numbers * m.width
    return (m.layers * tp_layer_numbers(m, n) + tables + final) * m.bytes_per_number


def tp_cache_bytes_per_token(m: ModelShape, devices: int) -> int:
    """Bytes of keys and values one token adds to each device's cache: its key-value
    heads in every layer."""
    kv = kv_heads_per_device(m, devices)
    return 2 * m.layers * kv * m.head_dim * m.bytes_per_number


def tp_handed_bytes(m: ModelShape, tokens: int, backward: bool = False) -> int:
    """Bytes one layer hands to its all-reduces for ``tokens`` positions: two arrays of
    tokens x d numbers in the forward pass, four with the backward pass."""
    tokens = checked_whole("tokens", tokens)
    return (4 if backward else 2) * tokens * m.width * m.bytes_per_number


def tp_layer_bytes(
    m: ModelShape, tokens: int, devices: int, backward: bool = False
) -> float:
    """Bytes each device sends for one layer: ring all-reduces of what it hands them,
    2(N-1)/N of it."""
    n = check_split(m, devices)
    return ring_bytes_sent("all-reduce", tp_handed_bytes(m, tokens, backward), n)


def tp_layer_times(
    m: ModelShape, acc: Accelerator, link: Link, devices: int, tokens: int
) -> dict[str, float]:
    """Seconds one layer's forward pass spends, on each of ``devices``, on its share of
    the weight arithmetic for ``tokens`` positions and on its two all-reduces over
    ``link`` (the pairs of attention are left out: they are cut the same way)."""
    n = check_split(m, devices)
    tokens = checked_whole("tokens", tokens, minimum=1)
    one = tokens * m.width * m.bytes_per_number
    return {
        "arithmetic": layer_weight_flops(m, tokens) / n / acc.flops_per_s,
        "communication": 2 * ring_time("all-reduce", one, n, link) if n > 1 else 0.0,
    }


def tp_widest_hidden(
    m: ModelShape, acc: Accelerator, link: Link, tokens: int, most: int = 64
) -> int:
    """The most devices, of those the layer divides among (up to ``most``), at which a
    layer's two all-reduces take no longer than its arithmetic, so that a schedule that
    overlaps them could hide them (1 when even two devices cannot)."""
    most = checked_whole("most", most, minimum=1)
    best = 1
    for n in range(2, most + 1):
        try:
            times = tp_layer_times(m, acc, link, n, tokens)
        except ValueError:
            continue  # the layer does not divide among n devices
        if times["communication"] <= times["arithmetic"]:
            best = n
    return best


def tp_decode_parts(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    context: int,
    batch: int = 1,
) -> dict[str, float]:
    """Seconds one decode step spends on each of ``devices``: reading its weights (of an
    untied input table, its share of the batch's rows) and its share of ``batch``
    caches of ``context`` tokens, its share of the arithmetic, and the 2L all-reduces
    of batch x d numbers the layers wait for in turn."""
    n = check_split(m, devices)
    context = checked_whole("context", context)
    batch = checked_whole("batch", batch, minimum=1)
    table = 0 if m.tied_embeddings else (m.vocab // n) * m.width   # looked up
    rows = input_rows_bytes(m, -(-batch // n))  # at least a share of the batch's rows
    weights = tp_weight_bytes(m, n) - table * m.bytes_per_number + rows
    read = weights + batch * context * tp_cache_bytes_per_token(m, n)
    flops = 2 * (tp_weight_bytes(m, n) // m.bytes_per_number - table)
    flops += 4 * m.layers * (m.heads // n) * m.head_dim * context
    one = batch * m.width * m.bytes_per_number
    wait = 2 * m.layers * ring_time("all-reduce", one, n, link) if n > 1 else 0.0
    return {
        "reading": read / acc.bytes_per_s,
        "arithmetic": batch * flops / acc.flops_per_s,
        "all-reduces": wait,
    }


def tp_sp_collectives(
    m: ModelShape, tokens: int, devices: int, backward: bool = False
) -> dict[str, float]:
    """Bytes each device sends for one layer under tensor and sequence parallelism, by
    collective: an all-gather of the positions before each column-cut block and a
    reduce-scatter after each row-cut one, (N-1)/N of T d b each (the backward pass runs
    each as the other). Together they are ``tp_layer_bytes``."""
    n = check_split(m, devices)
    tokens = checked_whole("tokens", tokens)
    one = ring_bytes_sent("all-gather", tokens * m.width * m.bytes_per_number, n)
    names = ["all-gather before attention", "reduce-scatter after attention",
             "all-gather before the feed-forward part",
             "reduce-scatter after the feed-forward part"]
    sent = {name: one for name in names}
    if backward:
        sent.update({f"{name}, backward": one for name in names})
    return sent


def tp_layer_activation_bytes(
    m: ModelShape, tokens: int, devices: int, sequence_parallel: bool = True
) -> int:
    """Bytes one layer keeps for the backward pass on each of ``devices`` for ``tokens``
    positions (``memory.layer_activation_bytes``' parts, without score grids or
    dropout):
    the per-head and inner parts are cut with their matrices (a key-value head no
    finer than one a device); the normalisations' inputs and the blocks' inputs are
    whole on every device unless sequence parallelism cuts them too."""
    n = check_split(m, devices)
    tokens = checked_whole("tokens", tokens, minimum=1)
    b = m.bytes_per_number
    queries = m.heads // n * m.head_dim
    kv = kv_heads_per_device(m, n) * m.head_dim
    inner = (4 if m.gated_ffn else 2) * m.ffn_width // n
    cut = tokens * (queries + kv + kv + queries + inner) * b
    whole = 4 * tokens * m.width * b  # two norm inputs, the two blocks' inputs
    return cut + (whole // n if sequence_parallel else whole)


def _matrix_flops(m: ModelShape, tokens: int, n: int) -> dict[str, int]:
    """Operations each device does in each matrix product of one layer's forward
    pass."""
    d, kv = m.width, kv_heads_per_device(m, n) * m.head_dim
    queries = m.heads // n * m.head_dim
    inner = m.ffn_width // n
    return {
        "query, key and value": 2 * tokens * d * (queries + 2 * kv),
        "attention output": 2 * tokens * queries * d,
        "feed-forward in": 2 * tokens * d * inner * (m.ffn_matrices - 1),
        "feed-forward out": 2 * tokens * inner * d,
    }


def tp_overlap_pairs(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    tokens: int,
    sequence_parallel: bool = True,
) -> dict[str, tuple[float, float]]:
    """For each matrix product of one layer's forward pass, its seconds of arithmetic on
    each device and the seconds of the collective that must run beside it to be hidden.
    With sequence parallelism each column-cut product waits on an all-gather of its
    input and each row-cut one feeds a reduce-scatter; without it, each row-cut product
    feeds a whole all-reduce and the column-cut ones need nothing."""
    n = check_split(m, devices)
    flops = _matrix_flops(m, tokens, n)
    one = tokens * m.width * m.bytes_per_number
    if n == 1:
        collective = {name: 0.0 for name in flops}
    elif sequence_parallel:
        gather = ring_time("all-gather", one, n, link)
        scatter = ring_time("reduce-scatter", one, n, link)
        collective = {"query, key and value": gather, "attention output": scatter,
                      "feed-forward in": gather, "feed-forward out": scatter}
    else:
        reduce = ring_time("all-reduce", one, n, link)
        collective = {"query, key and value": 0.0, "attention output": reduce,
                      "feed-forward in": 0.0, "feed-forward out": reduce}
    return {name: (flops[name] / acc.flops_per_s, collective[name]) for name in flops}


def tp_overlap_hidden(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    tokens: int,
    sequence_parallel: bool = True,
) -> bool:
    """Whether every collective of one layer takes no longer than the matrix product it
    runs beside (``tp_overlap_pairs``)."""
    pairs = tp_overlap_pairs(m, acc, link, devices, tokens, sequence_parallel)
    return all(c <= a for a, c in pairs.values())
