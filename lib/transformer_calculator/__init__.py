"""transformer_calculator: the book's arithmetic carried to published models.

It reads a Hugging Face style ``config.json`` (sizes only: no weights, no network) the
way ``transformers`` builds that family, and counts what the model holds and costs on a
chip.

- ``mixers``, ``feedforward``  the kinds of layer parts, each meeting one contract
- ``layout``       a published decoder's exact parts, layer by layer, and their sums
- ``model``        a layout with its number format
- ``families/``    how each family's config describes its layers (rules, and the table)
- ``config``       a ``config.json`` read into a ``Model``, with notes on every default
- ``matrices``, ``formats``, ``quantization``, ``stored``  the weight matrices a
  quantizer packs, weight and cache formats, a config's ``quantization_config``, and
  the bytes a model holds in its formats
- ``costs``        memory, work and time of a model on a chip, over its layout
- ``chips``        accelerators: the book's example, three numbers, or a real chip by
  name from the shipped table (``data/chips.json``), at a fraction of its peak
- ``serving``      what fits as a serving engine shares memory, and a request's times
- ``activations``, ``training``, ``training_time``  one training step's memory by part
  and its time
- ``splits/``, ``cli_splits``  a model split over many chips (tensor, pipeline, expert,
  data and context parallel): each device's share as a layout of its own, the
  collectives on the links of a machine and between machines, the schedules, and which
  splits would fit
- ``planning/``, ``cli_plan``  the ``plan`` command: every split, schedule and format
  that fits a training run or a service on N chips, ranked
- ``running_costs``  money (at least) and energy (at board power) of a
  run or of a million tokens; ``speculative``, ``cli_report_extras``  a draft model's
  rounds priced as section 1.6 prices them, and the report's money and energy
- ``report``, ``report_text``, ``cli``, ``cli_train``  the numbers for one model on one
  chip, and the command line (``python -m transformer_calculator report CONFIG.json``,
  ``train``, ``plan``, ``check``, ``chips``, ``configs``)
- ``estimate/``    what a real engine is expected to take beside each floor: each kernel
  on its own roof at fractions of peak fitted to measured runs (stored as data)
- ``measured_runs/``  the ``check`` command: measured runs written as options, their
  floors, estimates and measurements, the shipped tables' conversion and the fit
- ``engine_memory/``  the cache an engine leaves room for, as it sizes it (vLLM)

It builds on the book's own formulas (``transformer_arithmetic``: the roofline, pair
counts, units) and never hands them a layout: a plain decoder's layout agrees with those
formulas quantity by quantity (``tests/test_calculator_agrees.py``).
"""

from .counting.chips import chip, chips, derated
from .reading.config import (example_config_path, example_configs, model_from_config,
                             read_config)
from .anatomy.model import Model
from .service.serving import Request
from .command_line.report import format_report, report
from .service.serving import Serving
from .splits import Split, serving_split, splits_that_fit, training_split
from .counting.training import Lora, Training
from .counting.training_time import train_figures

__all__ = [
    "Model",
    "read_config",
    "model_from_config",
    "example_configs",
    "example_config_path",
    "report",
    "format_report",
    "Request",
    "Serving",
    "chip",
    "chips",
    "derated",
    "Training",
    "Lora",
    "train_figures",
    "Split",
    "serving_split",
    "training_split",
    "splits_that_fit",
]
