"""A published model split over many chips: what each device holds and how long a step
takes, for serving (``report``) and for training (``train``).

- ``plan``      the split (groups, schedule, choices, links) and the published links
- ``checks``    whether the model cuts so, refused in one line naming the cause first
                and the sizes that would do
- ``shares``    each device's share as a layout of its own (tensor, expert and
                pipeline parallel, redundant experts, uneven stages)
- ``links``     which link each group talks over (a machine's own, or the network
                between machines) and its collectives' cost there
- ``comm``      the collectives each layer and step hands on, in seconds
- ``serving_split``, ``training_split``  the figures of a split for serving and for
                training, and which splits would fit a model that does not fit one chip
- ``report``    the serving report made about the split throughout
- ``text``      the split's own lines in the text report

Every byte and second of a device is the calculator's own count of its layout
(``costs``, ``training``), and the communication is the teaching module's collectives
(``collectives``): nothing is counted twice.
"""

from .checks import check_split
from .plan import (CP_KINDS, GIVEN_LINK_KIND, MAX_SPLIT, Split, chip_link,
                   chip_machine, chip_network, interconnect)
from .serving_split import serving_split, splits_that_fit
from .shares import device_model, expert_layers, stage_models
from .training_split import training_split

__all__ = ["Split", "interconnect", "chip_link", "chip_network", "chip_machine",
           "check_split", "device_model", "stage_models", "expert_layers",
           "serving_split", "training_split", "splits_that_fit", "GIVEN_LINK_KIND",
           "MAX_SPLIT", "CP_KINDS"]
