"""Every family the calculator lays out itself, in the three forms a user's file takes
(``family_forms.py``: the class defaults, the defaults cut to a short file's fields, a shrunk
copy), against the model transformers builds from the same file: parameters, weight bytes,
active parameters, each layer's kind and window, and for the shrunk form the bytes of the cache a
real CPU model fills. Each form is exact, or refused in one line: never a wrong number."""
import pytest
import torch

from family_forms import (  # noqa: F401  (quiet_on_one_thread: a module fixture)
    build, counts, cut_form, defaults_form, hf_config, layer_kinds, quiet_on_one_thread,
    real_cache, shrunk_form,
)
from families_table import kinds_agree, per_token
from transformer_calculator.reading import catalog
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.families import FAMILIES

pytestmark = [pytest.mark.transformers, pytest.mark.meta_device, pytest.mark.torch_counts,
              pytest.mark.slow(seconds=16)]

LAYOUTS = sorted({t for f in FAMILIES for t in f.model_types} & set(catalog.decoders()))
PROMPT = 8
"""Tokens of the shrunk model's prompt: past every shrunk window (5 positions)."""


def outcome(cfg: dict, reference: dict) -> str:
    """"exact", "refused: ..." (one line), or what differs."""
    try:
        ours, _ = model_from_config(cfg, "x", route="layout")
    except ValueError as err:
        assert "\n" not in str(err)
        return f"refused: {err}"
    mine = {"parameters": costs.parameters(ours), "active": costs.active_parameters(ours),
            "weight_bytes": costs.weight_bytes(ours)}
    if mine != {k: reference[k] for k in mine}:
        return f"ours {mine}, transformers' {reference}"
    return "exact" if kinds_agree(ours, reference["kinds"]) else "layer kinds differ"


@pytest.mark.parametrize("model_type", LAYOUTS)
def test_class_defaults_and_a_short_file(model_type):
    full, short = defaults_form(model_type), cut_form(model_type)
    assert hf_config(short).to_dict() == hf_config(full).to_dict()  # transformers reads one model
    reference = {**counts(build(full), per_token(full)), "kinds": layer_kinds(full)}
    assert outcome(full, reference) == "exact"
    assert outcome(short, reference) == "exact"


@pytest.mark.parametrize("model_type", LAYOUTS)
def test_a_shrunk_copy_and_its_real_cache(model_type):
    cfg = shrunk_form(model_type, layers=8)
    torch.manual_seed(0)
    model = build(cfg, device="cpu")
    ours, _ = model_from_config(cfg, "x", route="layout")
    assert (costs.parameters(ours), costs.weight_bytes(ours)) == (
        counts(model, None)["parameters"], counts(model, None)["weight_bytes"])
    assert costs.active_parameters(ours) == counts(model, per_token(cfg))["active"]
    layout, bpn = ours.layout, ours.bytes_per_number
    theirs = real_cache(model, PROMPT, cfg["vocab_size"])
    assert (layout.stored_cache_bytes(bpn, PROMPT), layout.stored_cache_bytes(bpn, PROMPT + 1)) == theirs
    assert kinds_agree(ours, layer_kinds(cfg))
