"""Print the comparison table of the calculator against transformers for every published config.

    .venv/bin/python tests/transformers_table.py > table.md

Not a test (it takes a minute or two): for each file in tests/configs it builds the full-size
model on the meta device, counts its parameters, and runs a meta-device forward pass of
32,768 tokens followed by one more token, reading the shapes of the cache transformers
fills. Models with running-summary layers run their reference scan token by token, which
is slow even on the meta device, so for them the pass is 64 tokens and the cache at 32K is
extrapolated from the growth between 64 and 65 tokens (they have no windowed layers).
"""
from __future__ import annotations

import sys

import torch

from hf_reference import PUBLISHED, build, cache_bytes, parameter_count, published, quiet
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config
from transformer_arithmetic.units import size_text

LONG = 32_768


def meta_cache(model, tokens: int) -> tuple[int, int]:
    """Cache bytes after a meta-device prompt of ``tokens`` tokens, and after one more."""
    ids = torch.zeros((1, tokens + 1), dtype=torch.long, device="meta")
    with torch.no_grad():
        out = model(input_ids=ids[:, :tokens], use_cache=True, logits_to_keep=1)
        first = cache_bytes(out.past_key_values)
        out = model(input_ids=ids[:, tokens:], cache=out.past_key_values, use_cache=True, logits_to_keep=1)
        return first, cache_bytes(out.past_key_values)


def row(name: str) -> str:
    cfg = published(name)
    shape, _ = model_from_config(cfg, name)
    model = build(cfg)
    hybrid = costs.state_bytes(shape) > 0
    probe = 64 if hybrid else LONG
    at, after = meta_cache(model, probe)
    theirs_token = after - at
    theirs_long = at + (LONG - probe) * theirs_token
    ours_token = costs.cache_bytes(shape, LONG + 1) - costs.cache_bytes(shape, LONG)
    ours_long = costs.cache_bytes(shape, LONG)
    mark = "" if (ours_token, ours_long) == (theirs_token, theirs_long) else " *"
    extra = " (from 64 tokens)" if hybrid else ""
    return (f"| {name} | {shape.layout.family} | {costs.parameters(shape):,} / {parameter_count(model):,} | "
            f"{ours_token:,} / {theirs_token:,}{mark} | {size_text(ours_long, ',.2f')} / "
            f"{size_text(theirs_long, ',.2f')}{extra}{mark} |")


def main(names: list[str]) -> None:
    quiet()
    print("| config | family | parameters, ours / transformers' | cache bytes a token at 32K, ours / theirs "
          "| cache at 32K, ours / theirs |")
    print("|---|---|---|---|---|")
    for name in names or PUBLISHED:
        print(row(name), flush=True)
    print("\n\\* transformers keeps keys and values copied out to every query head; ours is the architecture's "
          "figure (the report's notes say both).")


if __name__ == "__main__":
    main(sys.argv[1:])
