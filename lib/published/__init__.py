"""published: the real world as its makers published it, stated once.

Every real chip, link and published model the book and the calculator speak of is a row
here, with the public source of each figure, and is read from here by both:

- ``chips``   accelerators: dense rates, memory bandwidth, memory (the card's, and what
  the driver reports), the link to their peers and how many it joins, board power
  (``data/chips.json``)
- ``links``   links between chips: bytes a second each way and the latency of one step
  of a collective (``data/links.json``)
- ``models``  the published models' ``config.json`` files, as published
  (``models/``, with ``models/SOURCES.json`` naming each one's repository)

It is data and nothing else: it imports no other package of the library, and the
teaching formulas (``transformer_arithmetic``) and the calculator
(``transformer_calculator``) turn its rows into their own types.
"""

from .chips import ChipFacts, chip, chips
from .links import LinkFacts, call_latency_s, link, links
from .models import model_config, model_config_path, model_hub_id, model_names

__all__ = [
    "ChipFacts",
    "chip",
    "chips",
    "LinkFacts",
    "link",
    "links",
    "call_latency_s",
    "model_config",
    "model_config_path",
    "model_hub_id",
    "model_names",
]
