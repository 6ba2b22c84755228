"""transformer_arithmetic: the arithmetic of transformers, shared by every page of the book.

Modules, each named after a concept:

- ``shapes``       a model's shape and an accelerator, and the book's stated examples
- ``memory``       parameters, training memory, the key-value cache, what fits
- ``work``         operations: weight work, pair work, a decode step, a prefill
- ``timing``       time on an accelerator: decode steps, throughput, prefill, answers
- ``masks``        causal, windowed and window-plus-global masks, and their pair counts
- ``blockwise``    attention worked through tile by tile with a running maximum and sum
- ``sampling``     softmax with temperature, entropy, top-p and top-k, two-step paths, beam search
- ``objective``    next-token prediction: shifted rows, losses, signals, passes
- ``summaries``    running summaries (fixed and content-chosen rates)
- ``convolution``  how far stacked plain and dilated filters see
- ``designs``      ways to mix positions side by side: reach, exact recall, memory, time
- ``simulated``    the fixed, documented table of the simulated example
- ``figures``      the book's one figure style, and how a figure reaches a page
- ``prose``        gluing computed numbers into the text
- ``reference_model``  a plain PyTorch decoder built to a shape: the independent reference
- ``hf_config``    a Hugging Face style config.json read into a ``ModelShape``
- ``families``     how each model family's config.json describes its layers (as transformers reads it)
- ``layout``       a published architecture's exact parts, layer by layer, and what they hold and cost
- ``report``       the key numbers for one model on one accelerator
                   (``python -m transformer_arithmetic report CONFIG.json``)
"""
from .shapes import EXAMPLE_ACCELERATOR, EXAMPLE_MODEL, GIB, KIB, MIB, Accelerator, ModelShape

__all__ = ["Accelerator", "ModelShape", "EXAMPLE_MODEL", "EXAMPLE_ACCELERATOR", "GIB", "MIB", "KIB"]
__version__ = "0.1.0"
