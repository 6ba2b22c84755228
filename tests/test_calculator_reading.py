"""What a file is, read without transformers: encoders and encoder-decoders refused from their
model_type and architectures, a vision-language file counted by its language model, the model's
own context limit shown and every length past it marked, one line for a folder without a
config.json, and the families command."""
import contextlib
import io
import json
from pathlib import Path

import pytest

from transformer_calculator.counting import costs
from transformer_calculator.command_line.report import report
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import model_from_config, read_config
from transformer_calculator.anatomy.context import context_limit
from transformer_arithmetic import EXAMPLE_ACCELERATOR
from published import model_config_path


CONFIGS = Path(__file__).resolve().parent / "configs"


def published(name: str) -> dict:
    own = CONFIGS / f"{name}.json"
    return json.loads((own if own.is_file() else model_config_path(name)).read_text())


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("cfg", "words"), [
    ({"model_type": "bert", "hidden_size": 768}, "an encoder"),
    ({"model_type": "roberta"}, "an encoder"),
    ({"model_type": "bart"}, "an encoder-decoder"),
    ({"model_type": "t5"}, "an encoder-decoder"),
    ({"model_type": "whisper"}, "an encoder-decoder"),
    ({"model_type": "vit"}, "not a model transformers builds as a causal language model"),
    ({"model_type": "something_new", "architectures": ["SomethingForMaskedLM"]}, "ForMaskedLM"),
    ({"model_type": "llava"}, "no text_config"),
    ({"model_type": "llava", "text_config": {"model_type": "bert"}}, "not a decoder"),
])
def test_a_file_is_refused_for_what_it_is(cfg, words):
    with pytest.raises(ValueError, match=words):
        model_from_config(cfg)


def test_a_vision_language_file_counts_its_language_model():
    text = published("llama-2-7b")
    alone, _ = model_from_config(text)
    wrapped, notes = model_from_config({"model_type": "llava", "torch_dtype": "float16",
                                         "text_config": {**text, "torch_dtype": None},
                                         "vision_config": {"model_type": "clip_vision_model"}})
    assert costs.parameters(wrapped) == costs.parameters(alone)
    assert costs.weight_bytes(wrapped) == costs.weight_bytes(alone)  # the top level's float16
    assert "language model alone" in notes[0] and "text_config" in notes[0]
    with pytest.raises(ValueError, match="disagree"):
        model_from_config({"model_type": "llava", "tie_word_embeddings": True, "text_config": text})


def test_the_context_limit_and_lengths_past_it():
    model, _ = read_config(str(model_config_path("llama-3-8b")))
    assert model.context.tokens == 8192
    r = report(model, EXAMPLE_ACCELERATOR)
    assert r["context_limit"] == {"tokens": 8192, "source": "max_position_embeddings = 8,192"}
    assert [row["beyond_context_limit"] for row in r["lengths"]] == [False, False, True, True]
    assert [row["beyond_context_limit"] for row in r["decode"]] == [False, False, True, True]
    assert r["longest_conversation"] > 8192 and r["longest_conversation_beyond_context_limit"]
    code, out, _ = run("report", str(model_config_path("llama-3-8b")))
    assert code == 0 and "context limit 8,192 tokens" in out and "   32,768 *" in out
    assert "beyond the 8,192 the model was built for" in out


@pytest.mark.parametrize(("cfg", "tokens", "words"), [
    ({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
      "original_max_position_embeddings": 32768}}, 131072, "yarn"),
    ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "original_max_position_embeddings": 8192}}, 131072, "max_position_embeddings = 131,072"),
    ({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}, 8192, "linear"),
    ({"n_positions": 1024}, 1024, "n_positions"),
])
def test_rotary_scaling_stretches_the_limit(cfg, tokens, words):
    limit = context_limit(cfg, {})
    assert limit.tokens == tokens and words in limit.source
    assert context_limit({}, {}) is None


def test_a_folder_without_a_config_is_one_line(tmp_path):
    code, out, err = run("report", str(tmp_path))
    assert code == 1 and out == "" and err.count("\n") == 1 and "holds no config.json" in err
    assert "Errno" not in err


def test_the_route_is_named():
    model, notes = read_config(str(model_config_path("llama-3-8b")))
    r = report(model, EXAMPLE_ACCELERATOR, notes=notes)
    assert r["route"] == "layout"
    code, out, _ = run("report", str(model_config_path("llama-3-8b")), "--json")
    assert json.loads(out)["route"] == "layout"


def test_a_known_decoder_without_a_layout_is_never_read_as_llama(monkeypatch):
    from transformer_calculator.reading import meta_route
    monkeypatch.setattr(meta_route, "available", lambda: False)
    for model_type in ("kimi_linear", "llama4_text", "lfm2", "zamba2", "minimax"):
        with pytest.raises(ValueError, match="no layout in this calculator"):
            model_from_config({**published("llama-2-7b"), "model_type": model_type})
    with pytest.raises(ValueError, match="has no layout for"):
        model_from_config({"model_type": "lfm2"}, route="layout")


def test_the_families_command_lists_every_route(monkeypatch):
    from transformer_calculator.reading import meta_route
    monkeypatch.setattr(meta_route, "available", lambda: False)
    code, out, _ = run("families", "--json")
    rows = {row["model_type"]: row for row in json.loads(out)}
    assert code == 0 and rows["llama"]["route"] == "layout" and rows["bert"]["route"] == "refused"
    assert rows["lfm2"]["route"] == "refused" and "transformers" in rows["lfm2"]["why"]
    assert rows["qwen3_next"]["route"] == rows["glm_moe_dsa"]["route"] == "layout"
    assert rows["gemma3"]["language_model"] == "gemma3_text"
    code, text, _ = run("families")
    assert text.splitlines()[-1].startswith(f"{len(rows)} model types (transformers 5.24")
