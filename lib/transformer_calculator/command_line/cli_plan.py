"""The ``plan`` command: given a model, a chip and how many, and a goal (a training
run: ``--tokens``, ``--seq-len``, ``--global-batch``; or a service: ``--prompt``,
``--answer``, ``--rate``, ``--ttft-ms``, ``--tpot-ms``), every plan that fits, ranked
(``planning``)."""

from __future__ import annotations

import copy
import json

from ..reading.inputs import WEIGHT_CHOICES, UsageError, apply_formats, load_model
from .cli_train import MAX_TRAINING_TOKENS, _whole
from .cli_values import ChipName, choice, price, pue, typed, whole
from ..anatomy.formats import CACHE_FORMATS
from ..planning import ServingGoal, Space, TrainingGoal, serving_plans, training_plans
from ..planning.space import MOST_PLANS
from ..counting.text import bytes_text
from ..planning.text import serving_lines, training_lines, why_serving, why_training
from ..counting.running_costs import per_million_tokens
from ..service.serving import Serving, served
from ..splits import chip_link, chip_machine, chip_network
from ..counting.training import OPTIMIZERS

__all__ = ["add_plan_parser", "run_plan", "NO_SERVING_ESTIMATE"]

NO_SERVING_ESTIMATE = (
    "no estimate stands beside a service's floors: report's estimate is fitted to "
    "engines that batch continuously and take prompts one at a time, while these "
    "floors are a static batch's, whose prompts are read together, so the two would "
    "not describe the same run")
"""Why ``plan`` gives a training run's estimate beside its floors and not a
service's (one line, in the text and the JSON)."""

_TRAINING = ("tokens", "seq_len", "global_batch")
_SERVING = ("prompt", "answer", "rate", "ttft_ms", "tpot_ms")


def _positive(text: str) -> float:
    """A positive finite number."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not 0 < value < 1e12:
        raise ValueError(f"must be a positive number below 1e12, got {text!r}")
    return value


def _formats(weights: dict):
    one = choice(weights)

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(dict.fromkeys(one(p) for p in text.split(",") if p.strip()))
        if not names:
            raise ValueError(f"needs one or more of {', '.join(weights)}")
        return names

    parse.__name__ = "formats"
    return parse


def add_plan_parser(commands) -> None:
    """The ``plan`` subcommand and its options."""
    p = commands.add_parser(
        "plan", help="search the splits that fit a training run or a service, ranked",
        description="Search the splits (tp, cp, pp, dp, ep), micro-batches, "
        "recomputation, ZeRO stages and weight formats that fit a goal on N chips, "
        "and rank them: a training run by tokens a second a chip, a service by "
        "requests a second a chip within its targets. Every time is a roofline floor.")
    p.add_argument("config", help="path to a config.json or a shipped example's name")
    p.add_argument("--chip", action=ChipName, required=True, metavar="NAME",
                   help="a chip from the shipped table (see the 'chips' command)")
    p.add_argument("--chips", type=typed(lambda t: whole(t, 1, 4096)), required=True,
                   metavar="N", help="how many chips")
    whole_of = typed(whole)
    p.add_argument("--tokens", type=_whole(1, MAX_TRAINING_TOKENS), metavar="N",
                   help="training: tokens of the whole run")
    p.add_argument("--seq-len", type=whole_of, metavar="N",
                   help="training: tokens a sequence")
    p.add_argument("--global-batch", type=whole_of, metavar="B",
                   help="training: sequences a step over every copy of the model")
    p.add_argument("--optimizer", choices=list(OPTIMIZERS), default="adamw",
                   help="training: the optimizer (default adamw)")
    p.add_argument("--prompt", type=whole_of, metavar="P",
                   help="serving: a request's prompt, in tokens")
    p.add_argument("--answer", type=whole_of, metavar="A",
                   help="serving: a request's answer, in tokens")
    p.add_argument("--rate", type=typed(_positive), metavar="R",
                   help="serving: requests arriving a second")
    p.add_argument("--ttft-ms", type=typed(_positive), metavar="MS",
                   help="serving: target time to first token, in milliseconds")
    p.add_argument("--tpot-ms", type=typed(_positive), metavar="MS",
                   help="serving: target time between tokens, in milliseconds")
    p.add_argument("--kv-dtype", type=typed(choice(CACHE_FORMATS)),
                   metavar="|".join(CACHE_FORMATS), help="serving: the cache's format")
    p.add_argument("--no-disaggregated", dest="disaggregated", action="store_false",
                   help="serving: aggregated plans only")
    p.add_argument("--formats", type=typed(_formats(WEIGHT_CHOICES)), default=None,
                   metavar="F[,F...]", help="weight formats allowed, e.g. bf16,fp8 "
                   "(default: the model's own)")
    p.add_argument("--overlap", action="store_true", help="every plan hides each "
                   "collective under the arithmetic it can run beside (default: added)")
    p.add_argument("--price", type=typed(price), default=None, metavar="USD",
                   help="dollars one chip-hour costs: plans ranked by dollars a "
                   "million tokens (at least)")
    p.add_argument("--pue", type=typed(pue), default=1.0, metavar="X",
                   help="the data centre's power usage effectiveness (default 1)")
    p.add_argument("--top", type=typed(lambda t: whole(t, 1, 1000)),
                   default=MOST_PLANS, metavar="K", help="plans the text shows "
                   f"(default {MOST_PLANS}; --json gives all)")
    p.add_argument("--json", action="store_true", help="print every plan as JSON")


def _goal(args) -> str:
    train = [k for k in _TRAINING if getattr(args, k) is not None]
    serve = [k for k in _SERVING if getattr(args, k) is not None]
    if train and serve:
        raise UsageError("plan takes one goal: a training run (--tokens, --seq-len, "
                         "--global-batch) or a service (--prompt, --answer, --rate, "
                         "--ttft-ms, --tpot-ms), not both")
    want, given = (_TRAINING, train) if train else (_SERVING, serve)
    if not given:
        raise UsageError("plan needs a goal: --tokens, --seq-len and --global-batch "
                         "(training) or --prompt, --answer, --rate, --ttft-ms and "
                         "--tpot-ms (serving)")
    missing = [k for k in want if k not in given]
    if missing:
        raise UsageError("plan also needs " + ", ".join(
            "--" + k.replace("_", "-") for k in missing))
    return "training" if train else "serving"


def _space(args, models: dict, chip) -> Space:
    link = chip_link(chip)
    if link is None:
        raise UsageError("argument --chip: this chip has no link to its peers in the "
                         "table; plan needs one (--chip h100-sxm)")
    network = chip_network(chip)
    machine = chip_machine(chip) or 8
    return Space(chips=args.chips, machine=min(machine, args.chips), formats=models,
                 links={"link": link, "network": network,
                        "machine": machine if network is not None else None},
                 overlap=args.overlap)


def _models(args, kind) -> tuple[dict, list[str]]:
    model, notes = load_model(args.config, "layout")
    if args.formats is None:
        if kind == "serving":
            model, note = served(model)
            notes += [note] if note else []
        own = apply_formats(model, notes, None, getattr(args, "kv_dtype", None))
        return {"model's": own}, notes
    return {f: apply_formats(model, notes, f, args.kv_dtype) for f in args.formats}, \
        notes


def _price_plans(plans: list[dict], args, chip, per_chip_key: str,
                 tokens_a: float) -> None:
    power = chip.facts.board_power_w if getattr(chip, "facts", None) else None
    for c in plans:
        c["per_million_tokens"] = per_million_tokens(
            c[per_chip_key] * tokens_a, args.price, power, args.pue).as_dict()


def run_plan(args) -> str:
    """Run the plan command: the ranked plans as text, or all of them as JSON."""
    kind = _goal(args)
    chip = args.chip
    models, notes = _models(args, kind)
    space = _space(args, models, chip)
    try:
        if kind == "training":
            goal = TrainingGoal(args.tokens, args.seq_len, args.global_batch,
                                args.optimizer)
            result = _searched((kind, chip, models, args.chips, args.overlap, goal),
                               lambda: training_plans(chip, space, goal))
            _price_plans(result["plans"], args, chip, "tokens_per_s_per_chip", 1)
            why = why_training
        else:
            goal = ServingGoal(args.prompt, args.answer, args.rate,
                               args.ttft_ms / 1e3, args.tpot_ms / 1e3, Serving())
            result = _searched((kind, chip, models, args.chips, args.overlap, goal,
                                args.disaggregated),
                               lambda: serving_plans(chip, space, goal,
                                                     args.disaggregated))
            _price_plans(result["plans"], args, chip, "requests_per_s_per_chip",
                         args.answer)
            why = why_serving
    except ValueError as err:
        raise UsageError(str(err)) from None
    plans = result["plans"]
    for c in plans:
        c["why"] = why(c, plans[0])
    result.update({"model": args.config, "chip": chip.name, "chips": args.chips,
                   "inputs": {k: getattr(args, k) for k in (*_TRAINING, *_SERVING)
                              if getattr(args, k) is not None},
                   "overlap": args.overlap, "price_per_chip_hour": args.price,
                   "pue": args.pue, "ranked_by": _ranked_by(kind, args.price),
                   "times": "roofline floors: a real step takes longer",
                   "notes": notes})
    if kind == "serving":
        result["estimate"] = NO_SERVING_ESTIMATE
    if args.json:
        return json.dumps(result, indent=2, allow_nan=False)
    return "\n".join(_text(result, kind, args))


_LAST_SEARCH: dict[str, dict] = {}
"""The last search's plans, by the text of everything it was given (one entry)."""


def _searched(given: tuple, search) -> dict:
    """A copy of ``search()``'s result, which the last call given the same inputs
    (the model's whole layout among them) computed already: the page's calculator
    asks for the text and the JSON of one plan in turn, and a search takes seconds
    there."""
    key = repr(given)
    if key not in _LAST_SEARCH:
        _LAST_SEARCH.clear()
        _LAST_SEARCH[key] = search()
    return copy.deepcopy(_LAST_SEARCH[key])


def _ranked_by(kind: str, price) -> str:
    what = ("tokens a second a chip at the floor" if kind == "training" else
            "the rate met, then requests a second a chip within the targets, at "
            "the floor")
    if price is not None:
        return (f"dollars a million tokens at least (the same order as {what}, at "
                "one price a chip-hour)")
    return what


def _text(r: dict, kind: str, args) -> list[str]:
    head = [f"Plans for {r['model']} on {r['chips']:,} x {r['chip']}, "
            + (f"training {args.tokens:,} tokens in sequences of {args.seq_len:,}, "
               f"{args.global_batch:,} sequences a step" if kind == "training" else
               f"serving prompts of {args.prompt:,} and answers of {args.answer:,} "
               f"tokens at {args.rate:g} a second, targets {args.ttft_ms:g} ms to "
               f"the first token and {args.tpot_ms:g} ms between tokens")]
    searched = (f"{r['structures_searched']} structures" if kind == "training" else
                f"{r['units_searched']} unit splits")
    head.append(f"Searched {searched}; {len(r['plans']):,} plans "
                + ("fit" if kind == "training" else "meet the targets")
                + f". Ranked by {r['ranked_by']}. Every time is a floor (the "
                "roofline at the chip's peak rates): a real run takes longer"
                + ("; beside each plan's floors stands the estimate train gives "
                   "for the same step (tokens a second a chip on a real run, with "
                   "its interval)." if kind == "training" else
                   f"; {NO_SERVING_ESTIMATE}."))
    if not r["plans"]:
        head.append(_none_fits(r, kind))
        return head
    body = (training_lines(r, args.top) if kind == "training"
            else serving_lines(r, args.top))
    return head + [""] + body + [""] + [f"Note: {n}" for n in r["notes"]]



def _none_fits(r: dict, kind: str) -> str:
    """Why no plan is printed, in one line."""
    if kind == "serving":
        return ("No plan meets the targets on these chips: looser targets or more "
                "chips")
    state, room = r["model_state_bytes"], r["chips_memory_bytes"]
    if state > room:
        return (f"No plan fits: the weights, their gradients and the optimizer's "
                f"states alone take {bytes_text(state)}, more than the "
                f"{bytes_text(room)} of all the chips together: more chips")
    least = r["least_memory_bytes"]
    need = f" (the lightest plan needs {bytes_text(least)} a device)" if least else ""
    return f"No plan fits{need}: more chips, a shorter sequence or a smaller batch"
