"""Every decoder family transformers 5.24 builds, cut to the fields a short published file
carries (``family_forms.cut_form``, from the class defaults the calculator ships): transformers
must read the short file as the very model its class defaults make, and the calculator must
count it the same. A shipped default read from the wrong place (a value ``__post_init__``
rewrites, as bailing_hybrid's ``head_dim``) or one that drifts fails here, family by family,
without building a model."""
import pytest

from family_forms import (  # noqa: F401  (quiet_on_one_thread: a module fixture)
    SHORT, cut_form, defaults_form, hf_config, quiet_on_one_thread,
)
from transformer_calculator.reading import catalog
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.families import FAMILIES

pytestmark = [pytest.mark.transformers, pytest.mark.slow(seconds=6)]

LAYOUTS = {t for f in FAMILIES for t in f.model_types}


def buildable(model_type: str) -> bool:
    try:
        hf_config(defaults_form(model_type))
    except Exception:  # noqa: BLE001 - a class whose defaults transformers itself refuses
        return False
    return True


@pytest.mark.parametrize("model_type", catalog.decoders())
def test_a_short_file_is_the_class_defaults(model_type):
    if not buildable(model_type):
        pytest.skip("transformers refuses this class's own defaults")
    short, full = cut_form(model_type), defaults_form(model_type)
    assert set(short) - set(full) <= set(SHORT)
    assert hf_config(short).to_dict() == hf_config(full).to_dict()
    if model_type in LAYOUTS:
        try:
            ours, _ = model_from_config(full, "x", route="layout")
        except ValueError as err:
            with pytest.raises(ValueError, match=str(err)[:40]):
                model_from_config(short, "x", route="layout")
            return
        cut, _ = model_from_config(short, "x", route="layout")
        assert (costs.parameters(cut), costs.cache_bytes_per_token(cut),
                costs.state_bytes(cut)) == (costs.parameters(ours),
                                            costs.cache_bytes_per_token(ours),
                                            costs.state_bytes(ours))


def test_the_short_fields_include_the_ones_published_files_carry():
    assert {"head_dim", "num_key_value_heads", "intermediate_size"} <= set(SHORT)
