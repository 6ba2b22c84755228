"""How vLLM sizes its key-value cache, version by version (its workers' own
arithmetic, ``determine_num_available_blocks`` and ``determine_available_memory``):

    blocks = floor((gpu_memory_utilization x total - weights - activation peak
                    - memory outside PyTorch) / (block_size x cache a token))

on each device, the smallest over the devices. ``total`` is the memory the driver
reports; the weights are the device's share; the activation peak is what one profile
step of ``max_num_batched_tokens`` tokens holds at its largest (a layer's residual,
normalised and attention inputs, three numbers a token and channel, beside its
feed-forward part's widened numbers; or the sampler's float32 logits of
``max_num_seqs`` requests and their sorted copies, whichever is larger); the memory
outside PyTorch is the communication buffers and the libraries' workspaces the
worker measures. The CUDA graphs are captured after the cache is sized, so they take
their memory from the ``1 - gpu_memory_utilization`` left over.

- up to v0.7 (the V0 engine): ``max_num_batched_tokens`` is the larger of
  ``max_model_len`` and 2,048, ``max_num_seqs`` 256, except that from v0.5 a model
  longer than 32,768 tokens has chunked prefill on, and 2,048;
- from v0.8 (the V1 engine, chunked prefill always on): 8,192 and 1,024 on a device
  of 70 GiB or more that is not an A100 (the API server's defaults), else 2,048 and
  256.

The memory outside PyTorch is a published measurement (``NON_TORCH``), the worker's
own log line ``non_torch_memory``; it is not derived here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...counting.chips import Chip
from ...anatomy.feedforward import Experts, FeedForward
from ...counting.costs import weight_bytes
from ...anatomy.model import Model
from ..serving import conversation_bytes, Serving
from transformer_arithmetic.units import GIB

__all__ = ["VllmVersion", "version", "NON_TORCH", "profile_tokens",
           "activation_peak_bytes", "device_total", "kv_budget_bytes", "gpu_blocks"]

NON_TORCH = {
    "v0": (0.35 * GIB, "https://github.com/vllm-project/vllm/issues/10517: "
           "non_torch_memory=0.35GiB (one RTX 3090)"),
    "v1": (0.35 * GIB, "the V0 worker's figure, kept: V1 logs no such line"),
}
"""Memory outside PyTorch a worker measures, by engine generation, and its source."""


@dataclass(frozen=True)
class VllmVersion:
    """A vLLM version: its number as given, and its engine (``v0`` or ``v1``)."""

    text: str
    engine: str
    minor: int = 0


def version(text: str | None) -> VllmVersion:
    """The vLLM version ``text`` names (``0.6.4``, ``v0.19.0``; a nightly or none:
    the V1 engine)."""
    if not text:
        return VllmVersion("", "v1", 99)
    clean = text.strip().lower().removeprefix("v")
    parts = clean.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return VllmVersion(text, "v1", 99)
    return VllmVersion(text, "v0" if (major, minor) < (0, 8) else "v1", minor)


def profile_tokens(v: VllmVersion, chip: Chip, max_model_len: int) -> tuple[int, int]:
    """(``max_num_batched_tokens``, ``max_num_seqs``) of the profile step."""
    if v.engine == "v0":
        chunked = v.minor >= 5 and max_model_len > 32768
        return (2048 if chunked else max(max_model_len, 2048)), 256
    large = chip.memory_bytes >= 70 * GIB and "a100" not in chip.key
    return (8192, 1024) if large else (2048, 256)


def _widened(part) -> int:
    """Numbers a token's feed-forward part widens to at once (gate and up, then the
    activation) on this device."""
    if isinstance(part, FeedForward):
        return (3 if part.gated else 2) * part.inner
    if isinstance(part, Experts):
        shared = _widened(part.shared) if part.shared else 0
        return math.ceil(part.per_token) * 3 * part.inner + shared
    return 0


def activation_peak_bytes(model: Model, tokens: int, seqs: int) -> int:
    """Bytes the profile step holds at its peak beyond the weights: ``tokens`` tokens'
    largest layer (three model-width numbers and the widened feed-forward numbers a
    token), or the sampler's logits of ``seqs`` requests in float32 with three
    copies as large (probabilities, sorted values, their indices), the larger."""
    layout, bpn = model.layout, model.bytes_per_number
    widest = max((_widened(b.ffn) for b in layout.blocks), default=0)
    forward = tokens * (3 * layout.width + widest) * bpn
    sampler = seqs * layout.vocab * 4 * 4
    return max(forward, sampler)


def device_total(chip: Chip) -> int:
    """Bytes the driver reports for ``chip`` (its card's memory where not
    published)."""
    facts = chip.facts
    if facts is not None and facts.driver_memory_bytes is not None:
        return facts.driver_memory_bytes
    return chip.memory_bytes


def kv_budget_bytes(stages, chip: Chip, v: VllmVersion, max_model_len: int,
                    utilization: float = 0.9) -> int:
    """Bytes vLLM leaves for the cache on the fullest device."""
    total = device_total(chip)
    tokens, seqs = profile_tokens(v, chip, max_model_len)
    return min(math.floor(utilization * total) - weight_bytes(st)
               - activation_peak_bytes(st, tokens, seqs) - round(NON_TORCH[v.engine][0])
               for st in stages)


def gpu_blocks(stages, chip: Chip, v: VllmVersion, max_model_len: int,
               utilization: float = 0.9, block_size: int = 16) -> int:
    """The "# GPU blocks" vLLM logs: whole blocks of ``block_size`` tokens in every
    layer that the cache budget holds on the fullest device."""
    budget = kv_budget_bytes(stages, chip, v, max_model_len, utilization)
    block = max(conversation_bytes(st, block_size, Serving(1.0, block_size))
                for st in stages)
    return max(budget // block, 0)
