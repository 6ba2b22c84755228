"""published: the real world as its makers published it, stated once.

Every real chip, link and published model the book and the calculator speak of is a row
here, with the public source of each figure, and is read from here by both:

- ``chips``   accelerators: dense rates, memory bandwidth, memory (the card's, and what
  the driver reports), the link to their peers and how many it joins, board power
  (``data/chips.json``)
- ``links``   links between chips: bytes a second each way and the latency of one step
  of a collective (``data/links.json``)
- ``fabrics`` machines (the chips one fast-link domain joins, in-switch reduction, the
  network cards a chip), NCCL's cost model for each protocol, and published
  measurements of collectives, among them by number of nodes (``data/fabrics.json``)
- ``plans``   how published runs cut their models over their chips (``data/plans.json``)
- ``models``  the published models' ``config.json`` files, as published
  (``models/``, with ``models/SOURCES.json`` naming each one's repository)

It is data and nothing else: it imports no other package of the library, and the
teaching formulas (``transformer_arithmetic``) and the calculator
(``transformer_calculator``) turn its rows into their own types.
"""

from .chips import ChipFacts, chip, chips
from .fabrics import (AchievedFacts, ByNodesFacts, MachineFacts, ProtocolFacts,
                      achieved, achieved_rows, by_nodes, by_nodes_rows, machine,
                      machines, nvls_efficiency, protocol, protocols)
from .links import LinkFacts, call_latency_s, link, links
from .plans import PlanFacts, plan, plans
from .models import model_config, model_config_path, model_hub_id, model_names

__all__ = [
    "ChipFacts",
    "chip",
    "chips",
    "LinkFacts",
    "link",
    "links",
    "call_latency_s",
    "MachineFacts",
    "ProtocolFacts",
    "AchievedFacts",
    "machine",
    "machines",
    "protocol",
    "protocols",
    "nvls_efficiency",
    "achieved",
    "achieved_rows",
    "ByNodesFacts",
    "by_nodes",
    "by_nodes_rows",
    "PlanFacts",
    "plan",
    "plans",
    "model_config",
    "model_config_path",
    "model_hub_id",
    "model_names",
]
