"""Operations and time on one accelerator: figures worked out for one model, and their limits.

The model and the chip are defined here, not taken from the book's example, so that the
example can change without breaking these figures."""
import itertools

import pytest

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import timing, work

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB


def test_one_token_at_2048():
    assert work.decode_flops(M, 2048) == 872_515_584  # about 872.5 million operations
    assert round(timing.arithmetic_time(M, A, 2048) * 1e6, 1) == 8.7
    assert round(timing.reading_time(M, A, 2048) * 1e6) == 873
    assert round(timing.decode_bytes(M, 2048) / ta.MIB) == 832


def test_throughput():
    # each conversation's wait and the machine's time per token: test_sampling_and_speed.py
    assert [round(timing.throughput(M, A, 2048, b)) for b in (1, 8, 64)] == [1146, 3506, 4721]


def test_pairs_against_weights():
    # one real layer: 2 operations per weight of its matrices per position, 4 per query channel
    # per causal pair; the crossing found by trying one length after another
    weights, channels = R.layer_matrix_weights(M), R.query_channels(M) // M.layers
    crossing = next(t for t in itertools.count(1) if 4 * channels * (t * (t + 1) // 2) > 2 * t * weights)
    assert work.pairs_pass_weights_at(M) == crossing == 12 * M.width == 12_288
    for t in (1, 100, crossing - 1, crossing):
        assert work.layer_weight_flops(M, t) == 2 * t * weights
        assert work.layer_pair_flops(M, t) == 4 * channels * (t * (t + 1) // 2)
    assert [round(100 * work.pair_share(M, n)) for n in (1024, 8192, 131072)] == [8, 40, 91]


def test_time_per_token_as_the_conversation_grows():
    ms = [round(timing.decode_step_time(M, A, n) * 1e3, 2) for n in (0, 8192, 131072)]
    assert ms == [0.67, 1.48, 13.56]
    assert round(1 / timing.decode_step_time(M, A, 131072)) == 74


def test_prompt_against_answer():
    prefill = timing.prefill_time(M, A, 8192)
    answer = timing.answer_time(M, A, 8192, 256)
    assert (round(prefill * 1e3), round(answer * 1e3)) == (88, 381)
    assert round((answer / 256) / (prefill / 8192)) == 139


def test_state_space_work():
    assert work.decode_pair_flops(M, 8192) == 805_306_368
    assert work.summary_flops_per_token(M, 16) == 1_572_864


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: timing.decode_step_time(M, A, 100, batch=0), "batch must be at least 1, got 0"),
        (lambda: timing.decode_step_time(M, A, -1), "context must be at least 0, got -1"),
        (lambda: timing.answer_time(M, A, 10, -2), "answer must be at least 0, got -2"),
    ],
)
def test_bad_inputs_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()
