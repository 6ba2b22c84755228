"""The cache a token, checked against the caches ``transformers`` really fills: for a tiny config of
each published family (sizes shrunk, every structural field as published), a CPU model reads a
prompt of ``PROMPT`` tokens (past every window) and writes one more; the calculator must give the
bytes its cache holds at both lengths. Where transformers keeps more than the architecture needs,
the report says so and the architecture's own figure is the smaller one."""
import pytest
import torch

from hf_reference import TINY, build, load_modelling_code, parameter_count, quiet, run_cache, tiny
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config

pytestmark = [pytest.mark.torch_counts, pytest.mark.transformers]

PROMPT = 8
"""Tokens in the prompt: more than any tiny window (5 positions, so 4 kept tokens)."""

STORES_MORE = {"falcon-40b"}
"""Families whose transformers cache copies keys and values out to every query head."""


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    quiet()
    load_modelling_code()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads only add overhead, and tests run two at a time
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", sorted(TINY))
def test_cache_matches_transformers(name):
    cfg = tiny(name)
    shape, notes = model_from_config(cfg, name)
    torch.manual_seed(0)
    model = build(cfg, device="cpu")
    assert costs.parameters(shape) == parameter_count(model)
    theirs = run_cache(model, PROMPT, cfg["vocab_size"])
    layout, bpn = shape.layout, shape.bytes_per_number
    assert (layout.stored_cache_bytes(bpn, PROMPT), layout.stored_cache_bytes(bpn, PROMPT + 1)) == theirs
    ours = (costs.cache_bytes(shape, PROMPT), costs.cache_bytes(shape, PROMPT + 1))
    grown = ours[1] - ours[0]  # past every window, only the unwindowed layers grow
    assert grown == costs.cache_bytes_per_token_past_windows(shape)
    if name in STORES_MORE:
        assert ours[0] < theirs[0] and ours[1] - ours[0] < theirs[1] - theirs[0]
        assert any("copied out to every query head" in n for n in notes)
    else:
        assert ours == theirs
        assert not any("copied out" in n for n in notes)


def test_every_kind_of_layer_is_covered():
    """The tiny configs include windowed, latent, multi-query, expert and running-summary layers."""
    kinds = set()
    for name in TINY:
        shape, _ = model_from_config(tiny(name), name)
        for block in shape.layout.blocks:
            kinds.add(type(block.mixer).__name__ + ("/window" if block.windowed else ""))
            kinds.add(type(block.ffn).__name__)
        if shape.summary()["kv_heads"] == 1 and shape.summary()["heads"] > 1:
            kinds.add("multi-query")
    assert kinds >= {"Attention", "Attention/window", "LatentAttention", "Mamba", "Mamba2", "FeedForward",
                     "Experts", "NoneType", "multi-query"}
