"""Answers of the choosing section. The splits are enumerated here independently (every
triple whose product is the devices and that the model and the batch allow) and each is
priced with the library's per-split costs, whose pieces test_many_chips_shards.py holds
against real sharded modules; the service is priced from the decode step written out by
hand (as in the serving answers)."""
import itertools
from functools import lru_cache

import pytest

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic import splits
from transformer_arithmetic.many_chips_inputs import MACHINE_DEVICES, NETWORK, NVLINK, REAL_CHIP, grown
from test_many_chips_07_serving import device_cache, device_weights

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/08_choosing"
BIG = grown(ta.EXAMPLE_MODEL)
BATCH, SEQ, DEVICES, CONTEXT = 512, 4096, 64, 4096


def allowed(tp):
    m = BIG
    return not (m.heads % tp or m.ffn_width % tp or m.vocab % tp) and not (m.kv_heads % tp and tp % m.kv_heads)


@lru_cache(maxsize=None)
def quickest(devices, between=NETWORK):
    best = None
    for dp, tp in itertools.product(range(1, devices + 1), repeat=2):
        pp = devices // (dp * tp) if devices % (dp * tp) == 0 else 0
        if not pp or dp * tp * pp != devices or BATCH % dp or BIG.layers % pp or not allowed(tp):
            continue
        split = splits.Split(dp, tp, pp)
        if sum(splits.device_memory(BIG, split, BATCH, SEQ).values()) > REAL_CHIP.memory_bytes:
            continue
        t = sum(splits.step_times(BIG, REAL_CHIP, split, BATCH, SEQ, NVLINK, between, MACHINE_DEVICES).values())
        best = min(best or (t, str(split)), (t, str(split)))
    return best


@lru_cache(maxsize=None)
def service(promise):
    """(tokens a second a chip, group, batch) of the best point within the promise, batches
    doubling while the caches fit."""
    best = (0.0, 0, 0)
    for n in (2, 4, 8):
        batch = 1
        while device_weights(BIG, n) + batch * CONTEXT * device_cache(BIG, n) <= REAL_CHIP.memory_bytes:
            read = (device_weights(BIG, n) + batch * CONTEXT * device_cache(BIG, n)) / REAL_CHIP.bytes_per_s
            flops = batch * (2 * device_weights(BIG, n) / 2 + 4 * BIG.layers * BIG.heads // n * BIG.head_dim * CONTEXT)
            one = batch * BIG.width * BIG.bytes_per_number
            wait = 2 * BIG.layers * (2 * (n - 1) * NVLINK.step_latency_s + 2 * (n - 1) / n * one / NVLINK.bytes_per_s)
            t = max(read, flops / REAL_CHIP.flops_per_s) + wait
            if t <= promise:
                best = max(best, (batch / t / n, n, batch))
            batch *= 2
    return best


CHECKS = {
    "ans_mc_double_split": lambda g: quickest(g["ex_mc_double"])[1],
    "ans_mc_double_s": lambda g: quickest(g["ex_mc_double"])[0],
    "ans_mc_double_speedup": lambda g: quickest(DEVICES)[0] / quickest(g["ex_mc_double"])[0],
    "ans_mc_network_split": lambda g: quickest(DEVICES, NVLINK)[1],
    "ans_mc_network_s": lambda g: quickest(DEVICES, NVLINK)[0],
    "ans_mc_network_gain": lambda g: quickest(DEVICES)[0] / quickest(DEVICES, NVLINK)[0],
    "ans_mc_promise_n": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[1],
    "ans_mc_promise_batch": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[2],
    "ans_mc_promise_rate": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[0],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
