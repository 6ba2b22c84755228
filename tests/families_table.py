"""Print, for every decoder family transformers 5.24 builds, what the calculator makes of
its three forms (``family_forms.py``) against transformers' own model.

    .venv/bin/python tests/families_table.py [model_type ...] > table.md

Not a test (it takes a few minutes); ``test_family_forms.py`` checks the same in the
budget of ``make test``. Each form is ``exact`` (parameters, weight bytes, active
parameters, each layer's kind and window, and for the shrunk form the bytes of the cache
a real CPU model fills after 8 and 9 tokens, all equal), ``refused`` (one line), or
``WRONG`` (a number that differs: there must be none).
"""
from __future__ import annotations

import sys

from family_forms import (build, counts, cut_form, defaults_form, hf_config,
                          layer_kinds, quiet, real_cache, shrunk_form)
from transformer_calculator.reading import catalog
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.families import FAMILIES
from transformer_calculator.anatomy.measured import MeasuredMixer
from transformer_calculator.anatomy.mixers import (Attention, LatentAttention, Mamba,
                                                   Mamba2, MixerKind)

LAYOUTS = {t for f in FAMILIES for t in f.model_types}
PROMPT = 8
SHRUNK_LAYERS = 8
LAYERED = (Attention, LatentAttention, Mamba, Mamba2, MeasuredMixer)
"""Kinds of layer whose cache transformers keeps in a layered cache, by layer type."""


def per_token(cfg: dict) -> int | None:
    """Experts a token uses, as the config transformers makes from ``cfg`` says (DBRX
    says it in its ``ffn_config``)."""
    config = hf_config(cfg).get_text_config(decoder=True)
    for source in (config, getattr(config, "ffn_config", None)):
        for name in ("num_experts_per_tok", "moe_topk", "moe_k", "num_experts_per_token",
                     "moe_top_k"):
            value = getattr(source, name, None)
            if isinstance(value, int) and value > 0:
                zero = getattr(config, "zero_expert_num", 0) or 0  # LongCat's idle experts
                routed = getattr(config, "n_routed_experts", 1)
                return value * routed / (routed + zero) if zero else value
    return None


def kinds_agree(model, kinds) -> bool:
    """Each layer of ``model`` keeps what transformers' cache layer of its kind keeps (a
    model counted from a looped build, with fewer blocks than cache layers, agrees
    when its blocks do)."""
    blocks = model.layout.blocks
    if model.route == "transformers" and len(blocks) != len(kinds):
        return True
    for block, (kind, window) in zip(blocks, kinds, strict=True):
        mixer = block.mixer
        if not isinstance(mixer, LAYERED):  # a kind transformers' cache layers do not hold
            continue
        if kind in ("sliding_attention", "chunked_attention"):
            if mixer.cache_cap != window - 1:
                return False
        elif kind in ("linear_attention", "conv"):
            if mixer.kind is not MixerKind.RUNNING_SUMMARY or mixer.cache_numbers:
                return False
        elif kind == "full_attention":
            if mixer.cache_cap is not None or not mixer.cache_numbers:
                return False
    return True


def compare(cfg: dict, route: str, reference: dict | None = None) -> tuple[str, str, dict]:
    """(outcome, detail, reference) for one form; ``reference`` is what transformers
    built from an earlier form it reads as the same model."""
    if reference and hf_config(cfg).to_dict() != reference["config"]:
        return "WRONG", "transformers reads this form as another model", reference
    same = reference and "model" in reference and reference["torch_dtype"] == (
        cfg.get("torch_dtype"), cfg.get("dtype"))
    try:
        if route == "transformers" and same:  # the meta route reads only the config
            ours = reference["model"]
        else:
            ours, _ = model_from_config(cfg, "x", route=route)
    except ValueError as err:
        return "refused", " ".join(str(err).split())[:150], reference or {}
    if not reference:
        try:
            model = build(cfg)
        except Exception as err:  # noqa: BLE001 - a form transformers cannot build
            return "unbuildable", " ".join(str(err).split())[:100], {}
        reference = {**counts(model, per_token(cfg)), "kinds": layer_kinds(cfg),
                     "config": hf_config(cfg).to_dict(),
                     "torch_dtype": (cfg.get("torch_dtype"), cfg.get("dtype"))}
    mine = {"parameters": costs.parameters(ours), "active": costs.active_parameters(ours),
            "weight_bytes": costs.weight_bytes(ours)}
    theirs = {k: reference[k] for k in mine}
    if mine != theirs:
        return "WRONG", f"ours {mine} theirs {theirs}", reference
    if not kinds_agree(ours, reference["kinds"]):
        return "WRONG", "layer kinds differ", reference
    reference["model"] = ours
    return "exact", "", reference


def shrunk(model_type: str, route: str) -> tuple[str, str]:
    cfg = shrunk_form(model_type, SHRUNK_LAYERS)
    try:
        model = build(cfg, "cpu")
        theirs = real_cache(model, PROMPT, 128)
    except Exception as err:  # noqa: BLE001 - a form transformers itself cannot run
        return "unbuildable", " ".join(str(err).split())[:100]
    try:
        ours, _ = model_from_config(cfg, "x", route=route)
    except ValueError as err:
        return "refused", " ".join(str(err).split())[:150]
    layout, bpn = ours.layout, ours.bytes_per_number
    mine = (layout.stored_cache_bytes(bpn, PROMPT), layout.stored_cache_bytes(bpn, PROMPT + 1))
    ref = counts(model, per_token(cfg))
    if (costs.parameters(ours), costs.weight_bytes(ours), mine) != (
            ref["parameters"], ref["weight_bytes"], theirs):
        return "WRONG", f"ours {costs.parameters(ours)} {mine} theirs {ref['parameters']} {theirs}"
    return "exact", ""


def full_size(model_type: str) -> tuple[str, str, str]:
    """(parameters, cache bytes a token, fixed state) of the class defaults by the model
    transformers builds on the meta device, or why it is refused."""
    try:
        theirs, _ = model_from_config(defaults_form(model_type), "x", route="transformers")
    except ValueError as err:
        return "refused: " + " ".join(str(err).split())[:90], "", ""
    return sizes(theirs)


def sizes(model) -> tuple[str, str, str]:
    """(parameters, cache bytes a token as transformers keeps it, fixed state)."""
    layout, bpn = model.layout, model.bytes_per_number
    per_token = layout.stored_cache_bytes(bpn, 2) - layout.stored_cache_bytes(bpn, 1)
    return (f"{costs.parameters(model):,}", f"{per_token:,}",
            f"{costs.state_bytes(model):,}")


def row(model_type: str) -> tuple[str, list[str]]:
    """The table's row for ``model_type``, and the outcome of each form."""
    native = model_type in LAYOUTS
    route = "layout" if native else "transformers"
    out, outcomes = [], []
    reference = None
    for form in (defaults_form, cut_form):
        outcome, detail, reference = compare(form(model_type), route, reference)
        out.append(f"{outcome} {detail}".strip())
        outcomes.append(outcome)
    outcome, detail = shrunk(model_type, route)
    out.append(f"{outcome} {detail}".strip())
    outcomes.append(outcome)
    ours = (reference or {}).get("model")
    mine = sizes(ours) if ours is not None else ("refused", "", "")
    theirs = full_size(model_type) if native else mine
    cells = " | ".join(f"{a} / {b}" if a != b else a for a, b in zip(mine, theirs))
    return f"| {model_type} | {route} | {' | '.join(out)} | {cells} |", outcomes


def main(types: list[str]) -> None:
    quiet()
    print("| model type | route | class defaults | cut | shrunk (real CPU cache) "
          "| parameters, ours / transformers' | cache bytes a token (as transformers "
          "keeps it), ours / transformers' | fixed state bytes |")
    print("|---|---|---|---|---|---|---|---|")
    tally: dict[str, int] = {}
    for model_type in types or catalog.decoders():
        line, outcomes = row(model_type)
        print(line, flush=True)
        worst = ("WRONG" if "WRONG" in outcomes else "refused" if "refused" in outcomes
                 else "unbuildable" if "unbuildable" in outcomes else "exact")
        tally[worst] = tally.get(worst, 0) + 1
    print("\n" + ", ".join(f"{n} {k}" for k, n in sorted(tally.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
