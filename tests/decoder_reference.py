"""What the book's plain PyTorch decoder (``reference_model.Decoder``) really holds and
multiplies: the independent reference the library's arithmetic is checked against.

- Parameters, weight bytes and the shapes of the matrices are read off a full-size decoder
  built on the meta device (shapes only: no memory, no initialisation of real numbers).
- Cache bytes come from a real decode loop on the CPU. The cache holds, in every layer,
  ``kv_heads x head_dim`` keys and as many values per token at the model's number format;
  it does not depend on the model's width (the key and value matrices project from it), its
  feed-forward width or its vocabulary. So the decoder that runs is built with those three
  shrunk to 8, which makes it cheap at every depth; everything the cache depends on is kept.

Each number is measured once per shape (``functools.lru_cache``): the tests and the answer
checks ask for the same few shapes many times. Only plain integers are returned, so nothing
shared can be changed by a caller.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from unittest import mock

import torch

from transformer_arithmetic import GIB, Accelerator, ModelShape
from transformer_arithmetic.runs.reference_model import Decoder, cache_bytes

DTYPES = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}
"""The torch number format of each ``bytes_per_number``."""

SHRUNK = 8
"""Width, feed-forward width and vocabulary of the decoder that fills a real cache."""

PLAIN_335M = ModelShape(layers=24, heads=16, head_dim=64, ffn_width=4096, vocab=32768, bytes_per_number=2,
                        name="a plain 335M-parameter decoder")
"""The library tests' own model (not the book's example, which may change): the figures they pin
(335,594,496 parameters, 4,721 tokens a second, ...) are this model's, measured here."""
CHIP_24GIB = Accelerator(flops_per_s=100e12, bytes_per_s=1e12, memory_bytes=24 * GIB,
                         name="a chip of 100 TFLOP/s, 1 TB/s and 24 GiB")
"""The library tests' own accelerator."""


@lru_cache(maxsize=None)
def _meta_decoder(m: ModelShape) -> Decoder:
    """A full-size decoder of shape ``m`` on the meta device (shapes, no numbers). Its
    embedding's random start is skipped: on the meta device it draws nothing, and
    PyTorch's meta kernel for ``normal_`` imports its compiler first (1 to 2 s)."""
    with torch.device("meta"), mock.patch.object(torch.nn.init, "normal_",
                                                 lambda tensor, *_, **__: tensor):
        return Decoder(m).to(DTYPES[m.bytes_per_number])


def _linears(module: torch.nn.Module) -> list[torch.nn.Linear]:
    return [mod for mod in module.modules() if isinstance(mod, torch.nn.Linear)]


@lru_cache(maxsize=None)
def parameters(m: ModelShape) -> int:
    """Trainable numbers of a full-size decoder of shape ``m``, a shared (tied) tensor once."""
    return sum(p.numel() for p in {id(p): p for p in _meta_decoder(m).parameters()}.values())


@lru_cache(maxsize=None)
def weight_bytes(m: ModelShape) -> int:
    """Bytes of those parameters held in ``m``'s number format."""
    return sum(p.numel() * p.element_size() for p in {id(p): p for p in _meta_decoder(m).parameters()}.values())


@lru_cache(maxsize=None)
def matrix_flops_per_token(m: ModelShape) -> int:
    """Operations one position costs in every matrix of the decoder (the output layer included):
    a multiply and an add for each weight, read off each ``Linear``'s in and out features."""
    return sum(2 * mod.in_features * mod.out_features for mod in _linears(_meta_decoder(m)))


@lru_cache(maxsize=None)
def norm_numbers(m: ModelShape) -> int:
    """Numbers held by every normalisation of the decoder (scales, and biases for LayerNorm)."""
    return sum(p.numel() for name, p in _meta_decoder(m).named_parameters() if "norm" in name)


@lru_cache(maxsize=None)
def layer_matrix_weights(m: ModelShape) -> int:
    """Weights of one block's matrices (attention and feed-forward)."""
    return sum(mod.weight.numel() for mod in _linears(_meta_decoder(m).blocks[0]))


@lru_cache(maxsize=None)
def query_channels(m: ModelShape) -> int:
    """Query channels (heads x head size) summed over the layers: each meets every earlier key."""
    return sum(block.attn.q.out_features for block in _meta_decoder(m).blocks)


@lru_cache(maxsize=None)
def cache_bytes_per_token(m: ModelShape) -> int:
    """Bytes a real decode loop's cache holds per token over all of ``m``'s layers: a one-token
    prompt and one greedy token, the bytes the cache's tensors then occupy, halved. Built with
    the width, feed-forward width and vocabulary shrunk (see the module's docstring)."""
    probe = dataclasses.replace(m, width=SHRUNK, ffn_width=SHRUNK, vocab=SHRUNK)
    torch.manual_seed(0)
    with torch.inference_mode():
        decoder = Decoder(probe).to(DTYPES[m.bytes_per_number]).eval()
        row, cache = decoder.generate(torch.tensor([[1]]), new_tokens=1)
    return cache_bytes(cache) // row.shape[1]


def read_weight_bytes(m: ModelShape, rows: int) -> int:
    """Bytes of weights a step that looks up ``rows`` tokens reads: every real tensor once, but
    of an input table that is not also the output layer's matrix only the rows a real
    ``Embedding`` hands back for ``rows`` tokens (looked up on the meta device)."""
    decoder = _meta_decoder(m)
    table = decoder.embed.weight
    if table is decoder.head.weight:
        return weight_bytes(m)
    looked_up = decoder.embed(torch.zeros(rows, dtype=torch.long, device="meta"))
    return (weight_bytes(m) - table.numel() * table.element_size()
            + looked_up.numel() * looked_up.element_size())


def decode_work(m: ModelShape, context: int, batch: int = 1, positions: int = 1) -> tuple[int, int]:
    """(operations, bytes) of one step that pushes ``positions`` new positions for each of
    ``batch`` conversations after ``context`` tokens: every position through the real matrices
    and normalisations (a scale is a multiply and an add a number), a score and a weighted value
    per query channel per earlier token; the real weights read once (of an untied input table
    the rows looked up), each conversation's real cache read once."""
    per_position = matrix_flops_per_token(m) + 2 * norm_numbers(m) + 4 * query_channels(m) * context
    return (batch * positions * per_position,
            read_weight_bytes(m, batch) + batch * context * cache_bytes_per_token(m))


def prefill_work(m: ModelShape, tokens: int) -> tuple[int, int]:
    """(operations, bytes) of the pass over a ``tokens``-long prompt: every position through the
    real matrices, every causal pair counted one position at a time, the weights read once (of
    an untied input table the distinct rows looked up) and the cache written."""
    pairs = sum(range(1, tokens + 1))   # position i attends to i positions
    flops = (matrix_flops_per_token(m) + 2 * norm_numbers(m)) * tokens + 4 * query_channels(m) * pairs
    rows = min(tokens, m.vocab)
    return flops, read_weight_bytes(m, rows) + tokens * cache_bytes_per_token(m)


def cache_bytes_after(m: ModelShape, prompt: int, new: int) -> int:
    """Bytes a real decoder with ``m``'s attention holds after a ``prompt``-token prompt and
    ``new`` greedy tokens. One layer is run (width, feed-forward width and vocabulary shrunk,
    which the cache does not depend on) and the result multiplied by ``m.layers``: every layer
    holds the same keys and values, and a long prompt through all of them costs seconds."""
    layer = dataclasses.replace(m, layers=1, width=SHRUNK, ffn_width=SHRUNK, vocab=SHRUNK)
    torch.manual_seed(0)
    with torch.inference_mode():
        decoder = Decoder(layer).to(DTYPES[m.bytes_per_number]).eval()
        _, cache = decoder.generate(torch.zeros(1, prompt, dtype=torch.long), new_tokens=new)
    return cache_bytes(cache) * m.layers


@lru_cache(maxsize=None)
def matrices(m: ModelShape) -> tuple[tuple[str, int, int], ...]:
    """(name, in features, out features) of every ``Linear`` of a real decoder of shape ``m``."""
    return tuple((name, mod.in_features, mod.out_features)
                 for name, mod in _meta_decoder(m).named_modules() if isinstance(mod, torch.nn.Linear))


@lru_cache(maxsize=None)
def norm_modules(m: ModelShape) -> tuple[int, ...]:
    """Numbers each real normalisation module holds (its scale, and bias for LayerNorm)."""
    return tuple(sum(p.numel() for p in mod.parameters()) for mod in _meta_decoder(m).modules()
                 if isinstance(mod, (torch.nn.LayerNorm, torch.nn.RMSNorm)))


def on_roof(acc: Accelerator, flops: float, nbytes: float) -> float:
    """One kernel's seconds on ``acc``'s roofline."""
    return max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def kernels_decode(m: ModelShape, acc: Accelerator, context: int, batch: int = 1,
                   positions: int = 1, weight_bytes_per_number: float | None = None) -> float:
    """Seconds of one decode step kernel by kernel, from a real decoder: each ``Linear`` carrying
    batch x positions tokens (its weight read at ``weight_bytes_per_number``, its input and output
    at the model's format), attention over each conversation's real cache read once, each real
    normalisation reading its numbers and the tokens' vectors and writing them back, and one
    input row a token read."""
    b, t = m.bytes_per_number, batch * positions
    w = b if weight_bytes_per_number is None else weight_bytes_per_number
    seconds = sum(on_roof(acc, 2 * t * i * o, b * t * (i + o) + w * i * o) for _, i, o in matrices(m))
    seconds += on_roof(acc, 4 * query_channels(m) * context * t,
                       batch * context * cache_bytes_per_token(m))
    seconds += sum(on_roof(acc, 2 * t * k, b * (k + 2 * t * m.width)) for k in norm_modules(m))
    return seconds + t * m.width * b / acc.bytes_per_s


def kernels_prefill(m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True) -> float:
    """Seconds of the pass over a ``tokens``-long prompt kernel by kernel, from a real decoder:
    each ``Linear`` carrying every token (the head the last one only unless ``all_logits``),
    attention over every causal pair reading its queries, keys and values and writing its
    output, the real normalisations, and the prompt's distinct rows."""
    b = m.bytes_per_number
    seconds = 0.0
    for name, i, o in matrices(m):
        t = tokens if (all_logits or name != "head") else 1
        seconds += on_roof(acc, 2 * t * i * o, b * (t * (i + o) + i * o))
    moved = tokens * b * m.layers * 2 * (m.heads + m.kv_heads) * m.head_dim
    seconds += on_roof(acc, 4 * query_channels(m) * sum(range(1, tokens + 1)), moved)
    seconds += sum(on_roof(acc, 2 * tokens * k, b * (k + 2 * tokens * m.width)) for k in norm_modules(m))
    return seconds + min(tokens, m.vocab) * m.width * b / acc.bytes_per_s
