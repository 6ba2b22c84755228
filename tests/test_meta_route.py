"""The route for a family without a layout here: the model transformers builds on the meta
device, read off it. Checked against a real CPU model of a shrunk copy (its parameters, its
experts and the cache it really fills after a prompt and one more token), for a family of each
kind of layer transformers has: experts, windows with attention sinks, chunked attention, linear
attention (Gated DeltaNet), Mamba-2 beside attention, short convolutions, latent attention with
an indexer, query-key norms after the blocks, lightning attention, looped layers."""
import json

import pytest
import torch

from family_forms import build, counts, quiet_on_one_thread, real_cache, shrunk_form  # noqa: F401
from families_table import per_token
from transformer_calculator.counting import costs
from transformer_calculator.command_line.report import report
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.reading.meta_route import available
from transformer_calculator.anatomy.mixers import MixerKind
from transformer_arithmetic import EXAMPLE_ACCELERATOR

pytestmark = [pytest.mark.transformers, pytest.mark.meta_device, pytest.mark.torch_counts,
              pytest.mark.slow(seconds=20)]

SAMPLE = {
    "olmoe": {}, "gpt_oss": {}, "llama4_text": {}, "qwen3_next": {"layer_types": None},
    "lfm2": {"full_attn_idxs": [2, 5]}, "deepseek_v32": {}, "exaone4": {}, "minimax_m2": {},
    "minimax": {}, "dory": {}, "cpmant": {}, "reformer": {},
}
"""A family of each kind, with the changes its shrunk copy needs: also MiniMax's lightning
attention (its states in a list of the cache's own), Dory's looped layers (each call its own
cache), CPM-Ant (the whole text again with its cache) and Reformer (run for real on the CPU,
which the meta device cannot)."""
PROMPT = 8


def test_transformers_is_here():
    assert available()


@pytest.mark.parametrize("model_type", sorted(SAMPLE))
def test_the_meta_route_matches_a_real_model(model_type):
    cfg = shrunk_form(model_type, layers=8, overrides=SAMPLE[model_type])
    torch.manual_seed(0)
    model = build(cfg, device="cpu")
    ours, notes = model_from_config(cfg, "x", route="transformers")
    assert ours.route == "transformers" and notes[0].startswith("route: transformers built")
    reference = counts(model, per_token(cfg))
    assert costs.parameters(ours) == reference["parameters"]
    assert costs.weight_bytes(ours) == reference["weight_bytes"]
    assert costs.active_parameters(ours) == reference["active"]
    layout, bpn = ours.layout, ours.bytes_per_number
    theirs = real_cache(model, PROMPT, cfg["vocab_size"])
    assert (layout.stored_cache_bytes(bpn, PROMPT), layout.stored_cache_bytes(bpn, PROMPT + 1)) == theirs
    r = report(ours, EXAMPLE_ACCELERATOR, notes=notes)
    assert r["route"] == "transformers" and r["parameters"] == reference["parameters"]


def test_the_kinds_of_layer_are_read():
    kinds = {}
    for model_type in ("qwen3_next", "gpt_oss", "lfm2"):
        ours, _ = model_from_config(shrunk_form(model_type, 8, SAMPLE[model_type]), "x",
                                    route="transformers")  # gpt_oss has a layout too
        kinds[model_type] = {(b.mixer.label, b.mixer.kind, b.mixer.cache_cap) for b in ours.layout.blocks}
    assert ("linear_attention", MixerKind.RUNNING_SUMMARY, None) in kinds["qwen3_next"]
    assert ("sliding_attention", MixerKind.ATTENTION, 4) in kinds["gpt_oss"]
    assert ("conv", MixerKind.RUNNING_SUMMARY, None) in kinds["lfm2"]


@pytest.mark.parametrize("flag,value", [("--weights", "int4"), ("--kv-dtype", "fp8")])
def test_a_packed_format_on_the_meta_route_is_refused_in_one_line(flag, value, capsys):
    """A model counted from its tensors has no matrix roles and no cache vectors: a format
    that packs either is refused (exit 2, one line naming the flag), while the model's own
    format still gives its cache, as the layout route does for the same file."""
    from transformer_calculator.command_line.cli import main

    assert main(["report", "llama-3-8b", "--route", "transformers", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"error: argument {flag}: {value}")
    assert "transformers route" in err
    main(["report", "llama-3-8b", "--route", "transformers", "--json"])
    measured = json.loads(capsys.readouterr().out)
    main(["report", "llama-3-8b", "--route", "layout", "--json"])
    laid_out = json.loads(capsys.readouterr().out)
    assert measured["kv_bytes_per_token"] == laid_out["kv_bytes_per_token"] > 0
