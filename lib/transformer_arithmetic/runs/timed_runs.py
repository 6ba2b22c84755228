"""Timed runs on the computer that executes a page: its two rates (memory bandwidth and
arithmetic), and a small decoder's decode steps, attention and prompt passes, each the
fastest of a few runs (the least disturbed by anything else the computer was doing).

The measured page (appendix, "Measured against predicted") calls these; their results
depend on the machine and change on every run by design, so no other page stores them.
``BOOK_TIMING_REPEATS`` caps the repeats (the tests set it to one).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from .reference_model import Decoder, StaticCache
from ..shapes import Accelerator, ModelShape

try:
    import resource  # page-fault counts (Linux and macOS)
except ImportError:  # pragma: no cover - Windows
    resource = None

__all__ = ["MachineRates", "fastest", "machine_rates", "decode_times", "AttentionShare",
           "attention_share", "prefill_times"]


def fastest(fn: Callable[[], object], repeats: int) -> float:
    """Seconds of the shortest of ``repeats`` timed runs of ``fn``, after one untimed
    warm-up (``BOOK_TIMING_REPEATS`` caps the repeats)."""
    repeats = min(repeats, int(os.environ.get("BOOK_TIMING_REPEATS", repeats)))
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True)
class MachineRates:
    """This computer as an ``Accelerator`` (its measured operations and bytes a
    second, its memory), with what was timed: ``read_bytes`` summed, ``matmul_n`` the
    side of the square matrices multiplied."""

    accelerator: Accelerator
    read_bytes: int
    matmul_n: int


def machine_rates(read_numbers: int = 64 * 2**20, n: int = 1536) -> MachineRates:
    """The bandwidth from summing ``read_numbers`` four-byte numbers (every byte read
    once, almost no arithmetic) and the operation rate from multiplying two n x n
    matrices (2 n^3 operations: one multiply and one add a term)."""
    with torch.inference_mode():
        big = torch.ones(read_numbers)
        read_bytes = big.numel() * big.element_size()
        bandwidth = read_bytes / fastest(big.sum, 7)
        del big
        a, b = torch.randn(n, n), torch.randn(n, n)
        rate = 2 * n**3 / fastest(lambda: a @ b, 5)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    acc = Accelerator(flops_per_s=rate, bytes_per_s=bandwidth, memory_bytes=ram,
                      name="this computer")
    return MachineRates(acc, read_bytes, n)


def _cache(m: ModelShape, context: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A random cache of ``context`` positions for every layer of ``m``."""
    return [(torch.randn(1, m.kv_heads, context, m.head_dim),
             torch.randn(1, m.kv_heads, context, m.head_dim)) for _ in range(m.layers)]


def decode_times(decoder: Decoder, m: ModelShape,
                 contexts: list[int]) -> tuple[list[float], list[float]]:
    """Seconds of one decode step at each context: (the cache joined to each step's
    new keys and values, as a growing list does; the cache written in place)."""
    token = torch.tensor([[1]])
    joined, in_place = [], []
    with torch.inference_mode():
        for context in contexts:
            cache = _cache(m, context)
            joined.append(fastest(lambda: decoder(token, cache), 4))
            del cache
            static = StaticCache(m, max_tokens=context + 1)
            for buffer in static.keys + static.values:
                buffer.normal_()

            def step() -> None:
                static.length = context  # the same stored context on every run
                decoder(token, static)

            in_place.append(fastest(step, 4))
            del static
    return joined, in_place


@dataclass(frozen=True)
class AttentionShare:
    """One decode step at ``context`` tokens: its ``whole`` seconds, the ``attending``
    seconds of attention over every layer's cache alone, and the ``fresh_bytes`` of
    memory the step touched for the first time (page faults times the page size)."""

    context: int
    whole: float
    attending: float
    fresh_bytes: int


def attention_share(decoder: Decoder, m: ModelShape, context: int) -> AttentionShare:
    """How much of a joined-cache decode step at ``context`` tokens is attention."""
    token = torch.tensor([[1]])
    with torch.inference_mode():
        cache = _cache(m, context)
        query = torch.randn(1, m.heads, 1, m.head_dim)
        attending = fastest(
            lambda: [F.scaled_dot_product_attention(query, k, v) for k, v in cache], 4)
        decoder(token, cache)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0
        start = time.perf_counter()
        decoder(token, cache)
        whole = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0
        del cache
    return AttentionShare(context, whole, attending,
                          (after - before) * os.sysconf("SC_PAGE_SIZE"))


def prefill_times(decoder: Decoder, m: ModelShape, prompts: list[int]) -> list[float]:
    """Seconds of one pass over a random prompt of each length."""
    out = []
    with torch.inference_mode():
        for length in prompts:
            tokens = torch.randint(0, m.vocab, (1, length))
            out.append(fastest(lambda: decoder(tokens), 2))
    return out
