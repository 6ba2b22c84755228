"""Answers of the choosing section. The splits are enumerated here independently (every
triple whose product is the devices and that the model and the batch allow) and each is
priced with the library's per-split costs (overlapped), whose pieces test_many_chips_shards.py
holds against real sharded modules; the service is priced from the decode step written out by
hand (as in the serving answers)."""
import itertools
from functools import lru_cache

import pytest

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic import splits
from transformer_arithmetic.examples.many_chips import (MACHINE_DEVICES, NETWORK,
                                                        NVLINK, REAL_CHIP, grown)
from test_many_chips_07_serving import device_cache, device_weights
from transformer_calculator.reading.plain import shipped_shape

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/08_choosing"
BIG = grown(ta.EXAMPLE_MODEL)
BATCH, SEQ, DEVICES, CONTEXT = 512, 4096, 64, 4096


def allowed(m, tp):
    return not (m.heads % tp or m.ffn_width % tp) and not (m.kv_heads % tp and tp % m.kv_heads)


@lru_cache(maxsize=None)
def quickest(devices, between=NETWORK, batch=BATCH, name=None):
    m = BIG if name is None else shipped_shape(name)
    best, found = None, 0
    for dp, tp in itertools.product(range(1, devices + 1), repeat=2):
        pp = devices // (dp * tp) if devices % (dp * tp) == 0 else 0
        if not pp or dp * tp * pp != devices or batch % dp or m.layers % pp or not allowed(m, tp):
            continue
        split = splits.Split(dp, tp, pp)
        if sum(splits.device_memory(m, split, batch, SEQ).values()) > REAL_CHIP.memory_bytes:
            continue
        t = splits.step_times(m, REAL_CHIP, split, batch, SEQ, NVLINK, between, MACHINE_DEVICES,
                              overlap=True)
        found += 1
        best = min(best or (sum(t.values()), str(split), t["arithmetic"]),
                   (sum(t.values()), str(split), t["arithmetic"]))
    return best + (found,)


@lru_cache(maxsize=None)
def service(promise):
    """(tokens a second a chip, group, batch) of the best point within the promise, batches
    doubling while the caches fit."""
    best = (0.0, 0, 0)
    for n in [n for n in (2, 4, 8) if allowed(BIG, n)]:
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
    "ans_mc_small_split": lambda g: quickest(DEVICES, batch=g["ex_mc_small_batch"])[1],
    "ans_mc_small_s": lambda g: quickest(DEVICES, batch=g["ex_mc_small_batch"])[0],
    "ans_mc_design_fits": lambda g: quickest(g["ex_mc_design_chips"], batch=g["ex_mc_design_batch"],
                                             name="llama-3-70b")[3],
    "ans_mc_design_split": lambda g: quickest(g["ex_mc_design_chips"], batch=g["ex_mc_design_batch"],
                                              name="llama-3-70b")[1],
    "ans_mc_design_s": lambda g: quickest(g["ex_mc_design_chips"], batch=g["ex_mc_design_batch"],
                                          name="llama-3-70b")[0],
    "ans_mc_design_busy": lambda g: (lambda q: q[2] / q[0])(
        quickest(g["ex_mc_design_chips"], batch=g["ex_mc_design_batch"], name="llama-3-70b")),
    "ans_mc_promise_n": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[1],
    "ans_mc_promise_batch": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[2],
    "ans_mc_promise_rate": lambda g: service(g["ex_mc_promise_ms"] / 1e3)[0],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
