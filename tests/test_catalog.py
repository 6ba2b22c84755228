"""The catalogue of model types the calculator ships (kinds, and each decoder's config-class
defaults) is what transformers itself says: regenerated here, it must equal the shipped file."""
import json

import pytest

from transformers_catalog import SHIPPED, catalogue, text

pytestmark = [pytest.mark.transformers, pytest.mark.slow(seconds=8)]


def test_the_shipped_catalogue_has_not_drifted():
    fresh = catalogue()
    shipped = json.loads(SHIPPED.read_text())
    drift = sorted(t for t in fresh["types"].keys() | shipped["types"].keys()
                   if fresh["types"].get(t) != shipped["types"].get(t))
    assert fresh["transformers"] == shipped["transformers"]
    assert not drift, f"regenerate with python tests/transformers_catalog.py: {drift[:10]}"
    assert text(fresh) == SHIPPED.read_text()


def test_the_kinds_are_what_the_files_are():
    types = catalogue()["types"]
    assert types["bert"]["kind"] == "encoder" and types["roberta"]["kind"] == "encoder"
    assert types["bart"]["kind"] == types["t5"]["kind"] == "encoder-decoder"
    assert types["llava"]["kind"] == "multimodal" and types["gemma3"]["text"] == "gemma3_text"
    assert types["gpt_oss"]["kind"] == "decoder" and types["gpt_oss"]["defaults"]["num_local_experts"] == 128
