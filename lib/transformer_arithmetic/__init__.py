"""transformer_arithmetic: the arithmetic the book's pages teach, for a plain decoder.

Each function is a formula a page quotes, for the book's ``ModelShape`` (every layer the
same, full attention, one dense feed-forward part). Modules, each named after a concept:

- ``shapes``       a model's shape and an accelerator (a published chip's, by
  ``accelerator_of``), and the book's stated examples
- ``units``        sizes of memory (KiB, MiB, GiB) and a chip's rates, as the book
  writes them
- ``memory``       parameters, training memory, the key-value cache, what fits
- ``work``         operations: weight work, pair work, a decode step, a prefill
- ``timing``       time on an accelerator (the roofline): decode steps, throughput,
  prefill, answers, speculative decoding
- ``intensity``    operations per byte, the ridge, and where a step stops waiting on
  reading
- ``training``     a training step's operations, bytes and time, model-flops
  utilisation, a whole run's compute and days
- ``masks``        causal, windowed and window-plus-global masks, and their pair counts
- ``blockwise``    attention worked through tile by tile with a running maximum and sum,
  its traffic counted, and split-KV decoding
- ``sampling``     softmax with temperature, entropy, top-p and top-k, beam search
- ``objective``    next-token prediction: shifted rows, losses, signals, passes
- ``summaries``    running summaries (fixed and content-chosen rates), and the two
  parallel scans (Hillis-Steele, Blelloch)
- ``linear_attention``  attention without its softmax: the walk, the masked grid,
  chunks, the delta rule, what one state hands back
- ``state_space``  banks of rates (one long filter), the selective layer, Mamba's state
  sizes
- ``convolution``  how far stacked plain and dilated filters see; long filters by FFT
- ``designs``      ways to mix positions side by side: reach, exact recall, memory, time
- ``simulated``    the fixed, documented table of the simulated example
  (``simulated_derivation``: how that table was made)
- ``collectives``  all-reduce, reduce-scatter, all-gather, all-to-all: steps, bytes
  sent and time on a link (rings, trees, two levels)
- ``data_parallel``, ``tensor_parallel``, ``pipeline``, ``experts``,
  ``context_parallel``  what each split puts on a device and what it sends
- ``splits``       choosing a split for a training run and for a service
- ``many_chips``  the links, real chip and large model the many-chips page
  states, with their sources
- ``reference_model``  a plain PyTorch decoder built to a shape: the independent
  reference (``gloo`` and ``sharded_runs``: the same for the splits, real
  gloo processes on this CPU)
- ``search``, ``checks``  the first length at which something holds; argument checks

Published models, whose layers differ, are counted by ``transformer_calculator``, which
builds on these formulas; nothing here imports it.
"""

from .shapes import (EXAMPLE_ACCELERATOR, EXAMPLE_MODEL, Accelerator, ModelShape,
                     accelerator_of)
from .units import GIB, KIB, MIB

__all__ = [
    "Accelerator",
    "accelerator_of",
    "ModelShape",
    "EXAMPLE_MODEL",
    "EXAMPLE_ACCELERATOR",
    "GIB",
    "MIB",
    "KIB",
]
__version__ = "0.1.0"
