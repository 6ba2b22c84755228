"""What fits and how long a request takes, as a serving engine sees it.

A serving engine (vLLM, for one) does not hand the cache every byte the weights leave:
it takes a fraction of the chip's memory (``gpu_memory_utilization``, 0.9 by default),
loads the weights into it, and cuts what is left into blocks of a fixed number of tokens
(16 by default), so each conversation's cache grows a whole block at a time. Here:

- ``cache_budget``: the bytes left for the cache in that fraction after the weights;
- ``largest_batch``: conversations of a given length whose blocks fit in it;
- ``longest_context``: the longest conversation a batch of a given size can each hold;
- ``chips_for_weights``: how many such chips the weights alone need when they do not
  fit;
- ``request_times``: time to the first token (the prompt's pass), the time between
  tokens and the whole answer, for one request or a batch of them.

The engine's own working memory (activations of its largest step, its graphs) also
comes out of that fraction; it is not counted here, so a real engine fits a little less.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_fraction, checked_whole

from ..counting import costs, stored
from ..anatomy.model import Model

__all__ = [
    "Serving",
    "served",
    "VLLM_DEFAULTS",
    "usable_bytes",
    "weights_fit",
    "chips_for_weights",
    "cache_budget",
    "conversation_bytes",
    "largest_batch",
    "longest_context",
    "RequestTimes",
    "request_times",
    "answer_step_times",
    "Request",
]


@dataclass(frozen=True)
class Request:
    """A request: a prompt of ``prompt`` tokens and an answer of ``answer`` tokens."""

    prompt: int
    answer: int

    def __post_init__(self) -> None:
        checked_whole("prompt", self.prompt, minimum=1)
        checked_whole("answer", self.answer, minimum=1)


@dataclass(frozen=True)
class Serving:
    """How an engine shares a chip's memory: the fraction of it the engine may use
    (``memory_utilization``) and the tokens a cache block holds (``block_size``)."""

    memory_utilization: float = 0.9
    block_size: int = 16

    def __post_init__(self) -> None:
        checked_fraction("memory_utilization", self.memory_utilization)
        checked_whole("block_size", self.block_size, minimum=1)


VLLM_DEFAULTS = Serving()
"""vLLM's defaults: ``gpu_memory_utilization`` 0.9, ``block_size`` 16."""


def served(model: Model) -> tuple[Model, str | None]:
    """``model`` as a serving engine loads it with its default number type (vLLM's
    ``--dtype auto``): a float32 config in 16 bits (bfloat16), anything else as it
    is; and a note when that changes it."""
    if model.bytes_per_number != 4:
        return model, None
    note = ("the config's numbers are float32 (or its file does not say): a serving "
            "engine loads them in 16 bits (vLLM's --dtype auto: bfloat16), as counted "
            "here")
    return dataclasses.replace(model, bytes_per_number=2), note


def usable_bytes(acc: Accelerator, serving: Serving) -> int:
    """Bytes of ``acc``'s memory the engine may use."""
    return math.floor(acc.memory_bytes * serving.memory_utilization)


def weights_fit(model: Model, acc: Accelerator, serving: Serving) -> bool:
    """True if the weights fit in the memory the engine may use."""
    return costs.weight_bytes(model) <= usable_bytes(acc, serving)


def chips_for_weights(model: Model, acc: Accelerator, serving: Serving) -> int:
    """Chips like ``acc`` whose usable memory together holds the weights, split evenly
    (the weights alone: each chip also needs room for its share of the cache)."""
    return math.ceil(costs.weight_bytes(model) / usable_bytes(acc, serving))


def cache_budget(model: Model, acc: Accelerator, serving: Serving) -> int:
    """Bytes left for the cache in the usable memory after the weights (an error if
    they do not fit)."""
    left = usable_bytes(acc, serving) - costs.weight_bytes(model)
    if left < 0:
        raise ValueError(
            f"the weights ({costs.weight_bytes(model):,} bytes) do not fit in the "
            f"{usable_bytes(acc, serving):,} bytes the engine may use"
        )
    return left


def conversation_bytes(model: Model, tokens: int, serving: Serving) -> int:
    """Bytes one conversation of ``tokens`` tokens holds in whole cache blocks."""
    tokens = checked_whole("tokens", tokens)
    return stored.cache_bytes(model, tokens, serving.block_size)


def largest_batch(model: Model, acc: Accelerator, tokens: int, serving: Serving) -> int:
    """Conversations of ``tokens`` tokens each whose cache blocks fit at once."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    return cache_budget(model, acc, serving) // conversation_bytes(
        model, tokens, serving
    )


def longest_context(
    model: Model, acc: Accelerator, batch: int, serving: Serving
) -> int | None:
    """Most tokens each of ``batch`` conversations can hold at once in whole blocks;
    None when the cache stops growing (every layer windowed or a running summary) and
    ``batch`` of them fit however long they get."""
    batch = checked_whole("batch", batch, minimum=1)
    budget = cache_budget(model, acc, serving) // batch
    return stored.longest_conversation(model, budget, serving.block_size)


@dataclass(frozen=True)
class RequestTimes:
    """One request's times, in seconds, for ``batch`` requests served together: the
    prompt's pass (time to the first token), the first and last step between tokens and
    their mean, and the whole answer (the prompt's pass and every step)."""

    batch: int
    prompt: int
    answer: int
    first_token: float
    first_step: float
    last_step: float
    mean_step: float
    whole: float


def answer_step_times(
    model: Model, acc: Accelerator, prompt: int, answer: int, batch: int
) -> list[float]:
    """Seconds of each decode step after the prompt's pass: the step that writes token
    j + 1 of the answer reads ``prompt + j`` tokens (j = 1 .. answer - 1)."""
    return [
        costs.decode_step_time(model, acc, prompt + j, batch) for j in range(1, answer)
    ]


def request_times(
    model: Model, acc: Accelerator, prompt: int, answer: int, batch: int = 1
) -> RequestTimes:
    """Times of ``batch`` requests served together, each with a ``prompt``-token
    prompt and an ``answer``-token answer: the prompt pass of all of them writes each
    one's first token; every later token is one decode step of the whole batch."""
    prompt = checked_whole("prompt", prompt, minimum=1)
    answer = checked_whole("answer", answer, minimum=1)
    batch = checked_whole("batch", batch, minimum=1)
    first = costs.prefill_time(model, acc, prompt, batch)
    steps = _step_sum(model, acc, prompt, answer, batch)
    if answer == 1:
        return RequestTimes(batch, prompt, answer, first, 0.0, 0.0, 0.0, first)
    head = costs.decode_step_time(model, acc, prompt + 1, batch)
    tail = costs.decode_step_time(model, acc, prompt + answer - 1, batch)
    return RequestTimes(
        batch, prompt, answer, first, head, tail, steps / (answer - 1), first + steps
    )


def _step_sum(
    model: Model, acc: Accelerator, prompt: int, answer: int, batch: int
) -> float:
    """The sum of ``answer_step_times``, without a step at a time: between two lengths
    at which a window fills, a step's arithmetic and its reading each grow by a fixed
    amount a token, so each stretch sums in closed form (split where the two cross)."""
    lo, hi = prompt + 1, prompt + answer - 1
    if hi < lo:
        return 0.0
    caps = sorted(
        {
            b.mixer.cache_cap
            for b in model.layout.blocks
            if b.mixer.cache_cap is not None and lo <= b.mixer.cache_cap < hi
        }
    )
    total, start = 0.0, lo
    for end in [*caps, hi]:
        total += _affine_sum(model, acc, batch, start, end)
        start = end + 1
    return total


def _affine_sum(model: Model, acc: Accelerator, batch: int, lo: int, hi: int) -> float:
    """Sum of step times for contexts ``lo`` to ``hi``, over which both limits grow
    linearly."""
    if hi < lo:
        return 0.0

    def limits(n: int) -> tuple[float, float]:
        return (
            costs.arithmetic_time(model, acc, n, batch),
            costs.reading_time(model, acc, n, batch),
        )

    (a0, r0), (a1, r1) = limits(lo), limits(hi)
    count = hi - lo + 1
    if count == 1:
        return max(a0, r0)
    da, dr = (a1 - a0) / (hi - lo), (r1 - r0) / (hi - lo)

    def run(first: int, last: int, use_a: bool) -> float:
        if last < first:
            return 0.0
        v0, dv = (a0, da) if use_a else (r0, dr)
        n = last - first + 1
        return n * v0 + dv * ((first - lo) + (last - lo)) * n / 2

    if (a0 >= r0) == (a1 >= r1):  # one limit binds the whole stretch
        return run(lo, hi, a0 >= r0)
    cross = lo + math.floor((r0 - a0) / (da - dr))  # last context the first limit binds
    cross = min(max(cross, lo), hi)
    first_a = a0 >= r0
    return run(lo, cross, first_a) + run(cross + 1, hi, not first_a)
