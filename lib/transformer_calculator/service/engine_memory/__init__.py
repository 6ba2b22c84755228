"""Serving memory as engines allocate it: what each engine leaves for the key-value
cache on a device (``kv_budget``), by its own rule.

- vLLM (``vllm.py``): a fraction (``gpu_memory_utilization``, 0.9) of the device's
  total, less the weights, the profile step's activation peak and the memory outside
  PyTorch, version by version;
- SGLang: ``mem_fraction_static`` (0.88 when it cannot size it otherwise) of the
  total, less the weights;
- TensorRT-LLM: ``free_gpu_memory_fraction`` (0.9) of what the weights leave free.

The fractions are the engines' documented defaults as aiconfigurator's memory model
records them (``sdk/memory.py``); a run that sets its own is not known here.
"""

from __future__ import annotations

import math

from ...counting.chips import Chip
from ...counting.costs import weight_bytes
from . import vllm

__all__ = ["ENGINE_FRACTIONS", "kv_budget", "vllm"]

ENGINE_FRACTIONS = {"vllm": 0.9, "sglang": 0.88, "trtllm": 0.9}
"""Each engine's default share of memory (vLLM and SGLang: of the total; TensorRT-LLM:
of what the weights leave)."""


def kv_budget(engine: str | None, version: str | None, stages, chip: Chip,
              max_model_len: int) -> int:
    """Bytes ``engine`` (None: vLLM's rule) leaves for the cache on the fullest device
    of ``stages``."""
    total = vllm.device_total(chip)
    if engine == "sglang":
        share = ENGINE_FRACTIONS["sglang"]
        return min(math.floor(share * total) - weight_bytes(st) for st in stages)
    if engine == "trtllm":
        share = ENGINE_FRACTIONS["trtllm"]
        return min(math.floor(share * (total - weight_bytes(st))) for st in stages)
    return vllm.kv_budget_bytes(stages, chip, vllm.version(version), max_model_len,
                                ENGINE_FRACTIONS["vllm"])
