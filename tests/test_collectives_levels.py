"""The teaching formulas the calculator's splits added, against brute force: an all-to-all's
bytes by destination, two-level collectives' bytes on the network, uneven stages, and the
interleaved schedule's limits (1F1B at v = 1, Korthikanti et al.'s factor for the first
stage)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transformer_arithmetic import pipeline as tpp
from transformer_arithmetic.collectives import (Link, all_to_all_time, hierarchical_time,
                                                ring_time)

INSIDE = Link(450e9, 0.6e-6, name="inside")
BETWEEN = Link(50e9, 2.7e-6, name="between")


@pytest.mark.parametrize(("devices", "per_machine"), [(8, 8), (16, 8), (32, 8), (12, 4)])
def test_an_all_to_all_sends_each_slice_where_its_device_sits(devices, per_machine):
    """Each device hands one slice X / N to every device: the slices for its machine's other
    devices go over the machine's link, the rest over the network, side by side."""
    x = 8.0 * devices * 1024
    me = 0
    near = sum(x / devices for d in range(devices)
               if d != me and d // per_machine == me // per_machine)
    far = sum(x / devices for d in range(devices) if d // per_machine != me // per_machine)
    latency = INSIDE.step_latency_s if devices == per_machine else BETWEEN.step_latency_s
    want = latency + max(near / INSIDE.bytes_per_s, far / BETWEEN.bytes_per_s)
    assert all_to_all_time(x, devices, per_machine, INSIDE, BETWEEN) == pytest.approx(want)


@pytest.mark.parametrize("kind", ["reduce-scatter", "all-gather"])
def test_two_levels_carry_a_machines_slice_over_the_network(kind):
    """A reduce-scatter over M machines of g: inside each machine on all of X, then between
    machines on its X / g; an all-gather the other way round. The network carries (M - 1) / M
    of X / g a device, g times less than one ring over every device would."""
    x, g, m = 64.0 * 2**20, 8, 4
    two = hierarchical_time(kind, x, g, m, INSIDE, BETWEEN)
    assert two == pytest.approx(ring_time(kind, x, g, INSIDE) + ring_time(kind, x / g, m,
                                                                          BETWEEN))
    flat = ring_time(kind, x, g * m, BETWEEN)
    assert two < flat


@given(st.integers(1, 200), st.integers(1, 64))
def test_uneven_stages_hold_every_layer_with_the_fewer_at_the_ends(layers, stages):
    if stages > layers:
        with pytest.raises(ValueError):
            tpp.uneven_stage_layers(layers, stages)
        return
    counts = tpp.uneven_stage_layers(layers, stages)
    assert sum(counts) == layers and len(counts) == stages
    assert max(counts) - min(counts) <= 1
    fewer = {i for i, c in enumerate(counts) if c < max(counts)}
    ends = [i // 2 if i % 2 == 0 else stages - 1 - i // 2 for i in range(stages)]
    assert fewer == set(ends[:len(fewer)])  # first, last, second, second to last, ...


@given(st.integers(1, 16), st.integers(1, 64), st.integers(1, 8))
def test_the_interleaved_schedule_falls_back_to_1f1b(stages, micro, virtual):
    for s in range(stages):
        held = tpp.interleaved_micro_batches_held(stages, micro, virtual, s)
        plain = tpp.micro_batches_held(stages, micro, "1F1B", s)
        if virtual == 1:
            assert held == plain
        assert held <= micro
    first = tpp.interleaved_micro_batches_held(stages, micro, virtual, 0)
    if virtual > 1 and micro >= stages + (stages - 1) / virtual:
        assert first == pytest.approx(stages * (1 + (stages - 1) / (stages * virtual)))
    share = tpp.interleaved_bubble_share(stages, micro, virtual)
    assert share == pytest.approx((stages - 1) / virtual / (micro + (stages - 1) / virtual))
