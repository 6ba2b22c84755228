"""transformer_calculator: the book's arithmetic carried to published models.

It reads a Hugging Face style ``config.json`` (sizes only: no weights, no network) the
way ``transformers`` builds that family, and counts what the model holds and costs on a
chip.

- ``mixers``, ``feedforward``  the kinds of layer parts, each meeting one contract
- ``layout``       a published decoder's exact parts, layer by layer, and their sums
- ``model``        a layout with its number format
- ``families/``    how each family's config describes its layers (rules, and the table)
- ``config``       a ``config.json`` read into a ``Model``, with notes on every default
- ``costs``        memory, work and time of a model on a chip, over its layout
- ``chips``        accelerators given on the command line
- ``report``, ``cli``  the numbers for one model on one chip, and the command line
  (``python -m transformer_calculator report CONFIG.json``)

It builds on the book's own formulas (``transformer_arithmetic``: the roofline, pair
counts, units) and never hands them a layout: a plain decoder's layout agrees with those
formulas quantity by quantity (``tests/test_calculator_agrees.py``).
"""

from .config import example_config_path, example_configs, model_from_config, read_config
from .model import Model
from .report import format_report, report

__all__ = [
    "Model",
    "read_config",
    "model_from_config",
    "example_configs",
    "example_config_path",
    "report",
    "format_report",
]
