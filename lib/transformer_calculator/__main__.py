"""``python -m transformer_calculator``: the calculator's command line (``cli.py``)."""

import sys

from .command_line.cli import main

sys.exit(main())
