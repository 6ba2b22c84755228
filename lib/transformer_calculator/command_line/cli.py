"""Command line: ``python -m transformer_calculator report CONFIG.json [options]``,
``train CONFIG.json [options]``, ``chips`` and ``configs``.

A thin layer over ``config.read_config``, ``report.report`` and
``training.train_figures``:
it reads the sizes from a Hugging Face style config.json (never weights, never the
internet) and prints the book's arithmetic for that model on a chip. Flag names follow
llm-analysis where it has one (``--flops-efficiency``, ``--hbm-memory-efficiency``) and
vLLM for the engine's memory (``--gpu-memory-utilization``, ``--block-size``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

from ..counting.chips import chips
from .cli_plan import add_plan_parser, run_plan
from .cli_report_extras import add_report_extras, extras_text, with_extras
from .cli_splits import (add_serving_split, add_split_options, split_given, split_of,
                         with_split_text)
from ..reading.inputs import WEIGHT_CHOICES, UsageError, apply_formats, load_model
from .cli_options import add_chip_options, add_format_options, chip_of
from .cli_train import add_train_parser, run_train
from .cli_values import CommandParser, choice, fraction, typed, whole, whole_list
from ..reading.config import ROUTES, example_configs
from ..anatomy.formats import CACHE_FORMATS
from ..measured_runs.command import add_check_parser
from ..service.serving import Request
from .report import format_report, report
from ..counting.text import bytes_text
from ..service.serving import Serving, served
from ..estimate.report import serving_estimates, serving_lines
from .report import BATCHES, LENGTHS

class _Parser(CommandParser):
    def error(self, message: str):  # one line instead of argparse's usage block
        raise UsageError(self.suggested(message))


ENGINE_CHOICES = {"vllm": None, "sglang": None, "trtllm": None}
"""The serving engines whose measured runs the estimate is fitted to."""


def _report_parser(commands) -> None:
    rep = commands.add_parser(
        "report",
        help="print the serving arithmetic for one config.json",
        description="Read a Hugging Face style config.json (sizes only) and print "
        "parameters, memory, cache, what fits, time per token, prefill and throughput.",
    )
    rep.add_argument(
        "config",
        help="path to a config.json (or its folder), or the name of a shipped "
        "example (see the 'configs' command)",
    )
    add_chip_options(rep)
    add_format_options(rep)
    rep.add_argument(
        "--kv-dtype",
        type=typed(choice(CACHE_FORMATS)),
        metavar="|".join(CACHE_FORMATS),
        help="store the key-value cache so",
    )
    rep.add_argument(
        "--context",
        type=typed(whole_list),
        metavar="N[,N...]",
        help="conversation lengths for the tables (tokens)",
    )
    rep.add_argument(
        "--batch",
        type=typed(whole_list),
        metavar="B[,B...]",
        help="conversations served at once for the tables",
    )
    rep.add_argument(
        "--prompt",
        type=typed(whole),
        metavar="P",
        help="a request's prompt, in tokens (with --answer)",
    )
    rep.add_argument(
        "--answer",
        type=typed(whole),
        metavar="A",
        help="a request's answer, in tokens (with --prompt)",
    )
    rep.add_argument(
        "--gpu-memory-utilization",
        type=typed(fraction),
        default=0.9,
        metavar="F",
        help="fraction of the chip's memory the engine "
        "uses, weights included (default 0.9, as vLLM)",
    )
    rep.add_argument(
        "--block-size",
        type=typed(whole),
        default=16,
        metavar="N",
        help="tokens a cache block holds (default 16, as vLLM)",
    )
    rep.add_argument(
        "--expert-weights",
        type=typed(choice(WEIGHT_CHOICES)),
        metavar="|".join(WEIGHT_CHOICES),
        help="store the routed experts so (the rest as --weights says)",
    )
    rep.add_argument(
        "--engine",
        type=typed(choice(ENGINE_CHOICES)),
        metavar="|".join(ENGINE_CHOICES),
        help="the serving engine the estimate is fitted for (default: all of them)",
    )
    rep.add_argument(
        "--engine-version",
        metavar="V",
        help="the engine's version (vLLM: how it sizes its cache, e.g. 0.6.4 or "
        "0.19.0)",
    )
    rep.add_argument(
        "--json",
        action="store_true",
        help="print the numbers as JSON instead of a table",
    )
    add_report_extras(rep)


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser, built once a process (about 100 options: building it
    took 7.5 ms a call) and reused, since parsing leaves no state in it."""
    parser = _Parser(
        prog="python -m transformer_calculator",
        description="The arithmetic of transformers for your own model: parameters, "
        "memory, time.",
        epilog="Each command's own options: python -m transformer_calculator COMMAND "
        "--help. A first try: python -m transformer_calculator report llama-3-8b "
        "--chip h100-sxm",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _report_parser(commands)
    add_train_parser(commands)
    add_plan_parser(commands)
    commands.add_parser(
        "configs", help="list the example configs shipped with the library",
        description="List the example config.json files shipped with the library: the "
        "name report and train take in place of a path, and the file it names.",
    )
    listing = commands.add_parser(
        "chips", help="list the shipped chips and their figures",
        description="List the chips --chip takes: each one's dense bf16 and fp8 "
        "rates, memory bandwidth, memory and link, with the datasheet's words and "
        "its address.",
    )
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    add_check_parser(commands)
    fam = commands.add_parser(
        "families",
        help="list every model type transformers builds and the route taken for it",
        description="List every model type transformers builds, whether it is a "
        "decoder, and how the calculator counts it: by its own layout, by the model "
        "transformers builds on the meta device, or not at all (and why).",
    )
    fam.add_argument("--json", action="store_true", help="print the list as JSON")
    for name in ("report", "train"):
        add_split_options(commands.choices[name], name == "report")
        commands.choices[name].add_argument(
            "--route",
            default="auto",
            choices=ROUTES,
            help="'layout' counts by the calculator's own layout of the family (pure "
            "Python), 'transformers' by the model transformers builds on the meta "
            "device; 'auto' (the default) takes the layout when the family has one",
        )
    return parser


def _families(args: argparse.Namespace) -> str:
    from ..reading import meta_route
    from ..reading.coverage import families, families_text

    rows = families(meta_route.available())
    return json.dumps(rows, indent=2) if args.json else families_text(rows)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _report(args: argparse.Namespace) -> str:
    if (args.prompt is None) != (args.answer is None):
        raise UsageError("arguments --prompt and --answer go together: give both or "
                         "neither")
    model, notes = load_model(args.config, args.route)
    model, note = served(model) if args.weights is None else (model, None)
    notes += [note] if note else []
    model = apply_formats(
        model, notes, args.weights, args.kv_dtype, args.expert_weights
    )
    notes += args.chip_notes
    engine = Serving(args.gpu_memory_utilization, args.block_size)
    kwargs: dict = {"engine": engine, "notes": notes}
    if args.context:
        kwargs["lengths"] = kwargs["batch_contexts"] = args.context
    if args.batch:
        kwargs["batches"] = args.batch
    if args.prompt is not None:
        kwargs["requests"] = [Request(args.prompt, args.answer)]
    chip = chip_of(args)
    result = report(model, chip, **kwargs)
    split = None
    if split_given(args):
        try:
            result = add_serving_split(result, args, model, chip, engine,
                                       kwargs.get("requests", ()))
            split = split_of(args, chip, args.dp)
        except ValueError as err:
            raise UsageError(str(err)) from None
    if model.route == "layout" and result["weights_fit"]:  # the split's, if one
        result["estimates"] = serving_estimates(
            model, chip, split, args.context or (LENGTHS[1],),
            kwargs.get("requests", ()), args.batch or BATCHES, args.engine,
            args.engine_version)
    result = with_extras(result, args, model, chip, engine, load_model)
    if args.json:
        return json.dumps(result, indent=2, allow_nan=False)
    text = extras_text(with_split_text(format_report(result), result), result)
    if "estimates" in result:
        head, _, tail = text.partition("\nAssumptions\n")
        text = "\n".join([head.rstrip("\n"), *serving_lines(result["estimates"]), "",
                          "Assumptions", tail])
    return text


def _chips(as_json: bool) -> str:
    rows = [
        {
            "key": c.key,
            "name": c.name,
            "bf16_flops_per_s": c.flops_per_s,
            "fp8_flops_per_s": c.fp8_flops_per_s,
            "bytes_per_s": c.bytes_per_s,
            "memory_bytes": c.memory_bytes,
            "interconnect": c.interconnect,
            "interconnect_bytes_per_s": c.interconnect_bytes_per_s,
            "source": c.source,
            "note": c.note,
        }
        for c in chips()
    ]
    if as_json:
        return json.dumps(rows, indent=2, allow_nan=False)
    lines = []
    for r in rows:
        fp8 = (
            "no fp8"
            if r["fp8_flops_per_s"] is None
            else f"fp8 {r['fp8_flops_per_s'] / 1e12:,.4g} TFLOP/s"
        )
        lines += [
            f"{r['key']:<13} {r['name']}: bf16 {r['bf16_flops_per_s'] / 1e12:,.4g} "
            f"TFLOP/s, {fp8}, {r['bytes_per_s'] / 1e12:.4g} TB/s, "
            f"{bytes_text(r['memory_bytes'])}, {r['interconnect']} "
            f"{r['interconnect_bytes_per_s'] / 1e9:,.4g} GB/s",
            f"{'':<13} {r['note']}",
            f"{'':<13} {r['source']}",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv``; return the exit code (0 done, 1 a config that
    cannot be read or is refused, 2 a bad argument). Every error is one line on standard
    error."""
    parser = _parser()
    if not (sys.argv[1:] if argv is None else argv):  # called bare: what it can do
        print(parser.format_help().rstrip())
        return 0
    try:
        args = parser.parse_args(argv)
    except UsageError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except SystemExit as done:  # --help prints and stops
        return done.code if isinstance(done.code, int) else 0
    try:
        if args.command == "configs":
            text = "\n".join(f"{path.stem:<16} {path}" for path in example_configs())
        elif args.command == "families":
            text = _families(args)
        elif args.command == "chips":
            text = _chips(args.json)
        elif args.command == "train":
            text = run_train(args)
        elif args.command == "plan":
            text = run_plan(args)
        elif args.command == "check":
            from ..measured_runs.command import run_check

            text = run_check(args)
        else:
            text = _report(args)
    except UsageError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ArithmeticError, RecursionError, MemoryError) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 1
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (e.g. piped into head)
        sys.stdout = None  # type: ignore[assignment]  # nothing more can be written
    return 0
