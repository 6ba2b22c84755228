"""What each decoder layer of a model ``transformers`` builds adds to its cache, read
off meta-device forward passes (shapes only: no weights, no memory).

Every call of a decoder layer is watched: the numbers the cache holds just before it
and just after it, entry by entry (``cache.layers[i]``, and any other per-layer list the
cache keeps, such as MiniMax's ``linear_cache``). So a layer's share is what its own
call wrote, whatever index it wrote it under: a looped layer (Dory, Inkling-2's loop,
HRM) called several times a token has one pass a call, each with its own cache, and a
layer that reads another layer's keys (Gemma's key-value sharing) adds nothing.
Needs ``torch`` and ``transformers``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Pass", "run_passes", "floats"]

Held = tuple[int, int]
"""(numbers at the model's format, numbers in float32)."""


@dataclass
class Pass:
    """One call of decoder layer ``module`` during a forward pass: what it added to the
    cache (``added``), under which entries (``entries``), and the first key and value
    tensors among them (for the attention's width), and the numbers of their running
    summaries (``recurrent_states``)."""

    module: int
    added: Held
    entries: tuple
    keys: object = None
    values: object = None
    summary: int = 0


def floats(value: object, seen: set[int] | None = None) -> Iterator:
    """Every floating-point tensor held in ``value`` (a cache, a cache layer, a dict, a
    list), each once."""
    import torch

    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from floats(v, seen)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from floats(v, seen)
    elif hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, type)):
        inside = ("transformers.cache", "transformers.mod")
        if type(value).__module__.startswith(inside):
            for v in vars(value).values():
                yield from floats(v, seen)


def held(value: object, bpn: int) -> Held:
    """(numbers at the model's format, numbers in float32) ``value`` holds."""
    model_format = float32 = 0
    for t in floats(value):
        size = t.element_size()
        if size == bpn:
            model_format += t.numel()
        elif size == 4:
            float32 += t.numel()
        else:
            raise ValueError(
                f"transformers' cache holds {t.dtype} numbers beside a model of {bpn} "
                "bytes a number: not counted here"
            )
    return model_format, float32


def _entries(cache) -> dict:
    """The cache's per-layer entries: ``("layers", i)`` for each cache layer, and
    ``(name, i)`` for each other list the cache keeps layer by layer."""
    out = {}
    for name, value in vars(cache).items():
        if isinstance(value, list):
            for i, item in enumerate(value):
                out[(name, i)] = item
    return out


def _snapshot(cache, bpn: int) -> dict:
    return {k: held(v, bpn) for k, v in _entries(cache).items()}


def _find_cache(args, kwargs):
    """The cache a decoder layer is handed: a transformers ``Cache``, or a family's own
    cache object (Reformer's ``ReformerDynamicCache``)."""
    from transformers.cache_utils import Cache

    for value in (*args, *kwargs.values()):
        if isinstance(value, Cache) or (
            type(value).__name__.endswith("Cache")
            and type(value).__module__.startswith("transformers.")
        ):
            return value
    return None


def _cache_argument(model) -> str:
    """The name under which the model's forward takes a cache to continue."""
    import inspect

    names = inspect.signature(model.forward).parameters
    return next((n for n in ("cache", "past_key_values", "past_buckets_states")
                 if n in names), "cache")


def run_passes(model, layers: list, ids, cache=None):
    """(the cache, the passes in call order) of one meta-device forward pass over
    ``ids``, continuing ``cache`` if given; ``layers`` are the decoder layer
    modules."""
    import torch

    bpn = next(model.parameters()).element_size()
    passes: list[Pass] = []
    before: dict = {}

    def pre(module, args, kwargs):
        found = _find_cache(args, kwargs)
        before["cache"], before["snap"] = found, (
            _snapshot(found, bpn) if found is not None else {}
        )

    def post(index):
        def hook(module, args, kwargs, output):
            found = before.get("cache")
            if found is None:
                raise ValueError("transformers passed its decoder layers no cache")
            after = _snapshot(found, bpn)
            old = before["snap"]
            changed = tuple(k for k in after if after[k] != old.get(k, (0, 0)))
            added = tuple(
                sum(after[k][j] - old.get(k, (0, 0))[j] for k in changed)
                for j in (0, 1)
            )
            entries = _entries(found)
            keys = values = None
            summary = 0
            for k in changed:
                layer = entries[k]
                if keys is None and getattr(layer, "keys", None) is not None:
                    keys, values = layer.keys, getattr(layer, "values", None)
                states = getattr(layer, "recurrent_states", None)
                summary += sum(t.numel() for t in floats(states))
            passes.append(Pass(index, added, changed, keys, values, summary))

        return hook

    handles = []
    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(layer.register_forward_hook(post(i), with_kwargs=True))
    try:
        with torch.no_grad():
            extra = {} if cache is None else {_cache_argument(model): cache}
            model(input_ids=ids, use_cache=True, **extra)
    finally:
        for h in handles:
            h.remove()
    found = before.get("cache")
    if found is None or not passes:
        raise ValueError("transformers returned no cache for this family")
    written = tuple(sum(p.added[j] for p in passes) for j in (0, 1))
    if cache is None and held(found, bpn) != written:
        raise ValueError(
            "transformers' cache holds numbers no decoder layer wrote: not counted here"
        )
    return found, passes
