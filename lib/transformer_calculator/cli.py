"""Command line: ``python -m transformer_calculator report CONFIG.json [--accelerator
...] [--json]``.

A thin layer over ``config.read_config`` and ``report.report``: it reads the sizes
from a Hugging Face style config.json (never weights, never the internet) and prints
the book's arithmetic for that model on an accelerator.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .chips import parse_accelerator
from .config import ROUTES, example_config_path, example_configs, read_config
from .report import format_report, report


class _UsageError(Exception):
    """A bad command line: reported in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(
        self, message: str
    ):  # one line instead of argparse's usage block and exit
        raise _UsageError(message)


def _accelerator(text: str):
    try:
        return parse_accelerator(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m transformer_calculator",
        description="The arithmetic of transformers for your own model: parameters, "
        "memory, time.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    rep = commands.add_parser(
        "report",
        help="print the arithmetic for one config.json",
        description="Read a Hugging Face style config.json (sizes only) and print "
        "parameters, "
        "memory, cache, what fits, time per token, prefill and throughput.",
    )
    rep.add_argument(
        "config",
        help="path to a config.json (or its folder), or the name of a shipped "
        "example (see the 'configs' command)",
    )
    rep.add_argument(
        "--accelerator",
        default="example",
        type=_accelerator,
        metavar="example|FLOPS,BYTES_PER_S,MEMORY_GIB",
        help="'example' (the book's example accelerator, the default) or three "
        "numbers: "
        "operations a second, bytes read a second, memory in GiB, e.g. 100e12,1e12,24",
    )
    rep.add_argument(
        "--json",
        action="store_true",
        help="print the numbers as JSON instead of a table",
    )
    rep.add_argument(
        "--route",
        default="auto",
        choices=ROUTES,
        help="'layout' counts by the calculator's own layout of the family (pure "
        "Python), 'transformers' by the model transformers builds on the meta device; "
        "'auto' (the default) takes the layout when the family has one",
    )
    commands.add_parser(
        "configs", help="list the example configs shipped with the library"
    )
    fam = commands.add_parser(
        "families",
        help="list every model type transformers builds and the route taken for it",
    )
    fam.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def _families(args: argparse.Namespace) -> str:
    from . import meta_route
    from .coverage import families, families_text

    rows = families(meta_route.available())
    return json.dumps(rows, indent=2) if args.json else families_text(rows)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _report(args: argparse.Namespace) -> str:
    path = Path(args.config)
    if not path.exists():
        try:
            path = example_config_path(args.config)  # a shipped example by name
        except ValueError as err:
            raise ValueError(f"no file {args.config!r}, and {err}") from None
    model, notes = read_config(path, route=args.route)
    result = report(model, args.accelerator, notes=notes)
    return (
        json.dumps(result, indent=2, allow_nan=False)
        if args.json
        else format_report(result)
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv``; return the exit code (0 done, 1 a config that
    cannot be read or is refused, 2 a bad argument). Every error is one line on standard
    error."""
    try:
        args = _parser().parse_args(argv)
    except _UsageError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except SystemExit as done:  # --help prints and stops
        return done.code if isinstance(done.code, int) else 0
    try:
        if args.command == "configs":
            text = "\n".join(f"{path.stem:<16} {path}" for path in example_configs())
        elif args.command == "families":
            text = _families(args)
        else:
            text = _report(args)
    except (OSError, ValueError, ArithmeticError, RecursionError, MemoryError) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 1
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (e.g. piped into head)
        sys.stdout = None  # type: ignore[assignment]  # nothing more can be written
    return 0
