"""The ``plan`` command's search: the splits, schedules and formats that fit a goal on
so many chips of one kind, ranked.

- ``space``     what the search varies and the goals it answers (a training run, a
                service), and the candidates' structures (tp, cp, pp, dp, ep)
- ``training_search``  every training plan that fits, ranked by tokens a second a chip
- ``serving_search``   every serving plan within the targets, aggregated and
                disaggregated, ranked by requests a second a chip
- ``text``      the plans in the command's text

Every byte and second of a candidate is the splits package's own count
(``splits.training_split``, ``splits.serving_split``): the search only chooses among
them, and its times are the roofline's floors, as theirs are.
"""

from .serving_search import ServingGoal, serving_plans
from .space import Space
from .training_search import TrainingGoal, training_plans

__all__ = ["Space", "TrainingGoal", "ServingGoal", "training_plans", "serving_plans"]
