"""The state a stack of Mamba or Mamba-2 blocks carries, against the tensors transformers'
own modules keep: tiny models built from their config classes on the CPU (no weights
downloaded), one forward pass with a cache."""
import pytest
import torch

from transformer_arithmetic import state_space as ss

pytestmark = [pytest.mark.transformers, pytest.mark.torch_kernels]

transformers = pytest.importorskip("transformers")


def cache_tensors(model, tokens: int):
    """(recurrent-state bytes, filter-window bytes) after a forward pass of ``tokens``."""
    torch.manual_seed(0)
    with torch.no_grad():
        out = model(torch.arange(1, tokens + 1)[None] % 16, use_cache=True)
    cache = out.cache
    recurrent = sum(t.numel() * t.element_size() for layer in cache.layers
                    for t in layer.recurrent_states.values())
    window = sum(t.numel() * t.element_size() for layer in cache.layers
                 for t in layer.conv_states.values())
    return recurrent, window


@pytest.mark.parametrize("tokens", [3, 9])
def test_mamba_state_bytes_equal_a_real_modules(tokens):
    cfg = transformers.MambaConfig(vocab_size=16, hidden_size=32, state_size=4, expand=2,
                                   conv_kernel=4, num_hidden_layers=2)
    model = transformers.MambaForCausalLM(cfg).float().eval()
    recurrent, window = cache_tensors(model, tokens)
    assert recurrent == ss.mamba_state_bytes(2, 32, 2, 4, bytes_per_number=4)
    assert window == ss.mamba_filter_bytes(2, 2 * 32, 4, bytes_per_number=4)


def test_mamba2_state_bytes_equal_a_real_modules():
    cfg = transformers.Mamba2Config(vocab_size=16, hidden_size=32, state_size=8, expand=2,
                                    conv_kernel=4, num_hidden_layers=2, head_dim=8,
                                    num_heads=8, n_groups=1, chunk_size=4)
    model = transformers.Mamba2ForCausalLM(cfg).float().eval()
    recurrent, window = cache_tensors(model, 6)
    assert recurrent == ss.mamba_state_bytes(2, 32, 2, 8, bytes_per_number=4)
    channels = ss.mamba2_filter_channels(64, 1, 8)
    assert window == ss.mamba_filter_bytes(2, channels, 4, bytes_per_number=4)
