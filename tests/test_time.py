"""Operations and time on the example accelerator: the stated figures and their limits."""

import pytest

import transformer_arithmetic as ta
from transformer_arithmetic import timing, work

M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR


def test_one_token_at_2048():
    assert work.decode_flops(M, 2048) == 872_515_584  # about 872.5 million operations
    assert round(timing.arithmetic_time(M, A, 2048) * 1e6, 1) == 8.7
    assert round(timing.reading_time(M, A, 2048) * 1e6) == 873
    assert round(timing.decode_bytes(M, 2048) / ta.MIB) == 832


def test_throughput_and_each_conversations_wait():
    assert [round(timing.throughput(M, A, 2048, b)) for b in (1, 8, 64)] == [1146, 3506, 4721]
    waits = [timing.decode_step_time(M, A, 2048, b) for b in (1, 8, 64)]
    assert waits == sorted(waits)  # a conversation's own wait grows with the batch
    assert round(waits[-1] / 64 * 1e6) == 212  # the machine's time per token, not anyone's wait


def test_pairs_against_weights():
    assert work.pairs_pass_weights_at(M) == 12 * M.width == 12_288
    t = work.pairs_pass_weights_at(M)
    assert work.layer_pair_flops(M, t) > work.layer_weight_flops(M, t)
    assert work.layer_pair_flops(M, t - 1) <= work.layer_weight_flops(M, t - 1)
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
