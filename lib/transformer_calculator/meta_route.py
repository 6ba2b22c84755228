"""The second route: a family without a layout here, counted from the model
``transformers`` itself builds on the meta device (shapes only: no weights, no memory,
nothing downloaded), as ``accelerate estimate-memory`` does.

``measure(cfg, ...)`` makes the config object as ``from_pretrained`` would (without
remote code), builds the causal language model on the meta device at the file's number
format, and reads off it:

- every parameter tensor once (tied matrices are one tensor), with its bytes at the
  format ``transformers`` holds it in;
- each decoder layer's parameters, its experts (a module called ``experts`` whose
  tensors stack one expert each) and how many of them a token uses (the config's
  ``num_experts_per_tok`` or its family's name for it);
- the cache of each layer, from two meta-device forward passes: after one token and two
  (the numbers a token adds, and the fixed state), and after a prompt longer than every
  window and one more token (which layers stop growing, and after how many tokens).

It needs ``torch`` and ``transformers`` (5.24); without them a family without a layout
is refused in one line. Everything else stays pure Python.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

from .layout import Block
from .measured import MeasuredExperts, MeasuredLayout, MeasuredMixer
from .mixers import FixedState, MixerKind
from .model import Model

__all__ = ["available", "measure", "TOP_K_NAMES"]

TOP_K_NAMES = (
    "num_experts_per_tok",
    "moe_topk",
    "num_experts_per_token",
    "experts_per_token",
    "moe_k",
    "top_k",
    "router_top_k",
    "num_selected_experts",
)
"""Config fields that say how many experts the router picks for each token."""

_SUMMARY_KINDS = {"linear_attention", "conv"}
_SHORT_PROMPT = 16
"""Tokens of the long prompt when no layer has a window."""


def available() -> bool:
    """True when ``torch`` and ``transformers`` can be imported."""
    return all(
        importlib.util.find_spec(m) is not None for m in ("torch", "transformers")
    )


def _floats(value: object) -> Iterator:
    """Every floating-point tensor held in ``value`` (a cache layer, a dict, a list)."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _floats(v)


def _held(layer: object, bpn: int) -> tuple[int, int]:
    """(numbers at the model's format, numbers in float32) a cache layer holds."""
    model_format = float32 = 0
    for t in _floats(vars(layer)):
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


def _run(model, tokens: int) -> tuple[list, list]:
    """Cache layers after a meta-device prompt of ``tokens`` tokens and after one more,
    each as (numbers at the model's format, in float32)."""
    import torch

    ids = torch.zeros((1, tokens + 1), dtype=torch.long, device="meta")
    with torch.no_grad():
        out = model(input_ids=ids[:, :tokens], use_cache=True)
        cache = out.past_key_values
        if cache is None or not hasattr(cache, "layers"):
            raise ValueError("transformers returned no layered cache for this family")
        bpn = next(model.parameters()).element_size()
        first = [_held(layer, bpn) for layer in cache.layers]
        out = model(input_ids=ids[:, tokens:], cache=cache, use_cache=True)
        second = [_held(layer, bpn) for layer in out.past_key_values.layers]
        return first, second, out.past_key_values


def _text_config(config):
    return config.get_text_config(decoder=True)


def _top_k(config, layer: int) -> int:
    for name in TOP_K_NAMES:
        value = getattr(config, name, None)
        if isinstance(value, list):
            value = value[layer]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise ValueError(
        "this model has experts but its config names no count of experts a token "
        f"uses ({', '.join(TOP_K_NAMES[:3])}, ...)"
    )


def _heads(config, layer: int, default: int) -> int:
    """Query heads of layer ``layer`` (a config may set them layer by layer)."""
    per_layer = getattr(config, "per_layer_config", None)
    for source in (per_layer[layer] if per_layer else None, config):
        try:
            value = getattr(source, "num_attention_heads", None)
        except Exception:  # noqa: BLE001 - transformers: a per-layer attribute
            continue
        if isinstance(value, list):
            value = value[layer]
        if isinstance(value, int) and value > 0:
            return value
    return default


def _layer_list(model, layers: int):
    """The ModuleList of the decoder's layers: the largest list of ``layers``
    modules."""
    import torch

    lists = [
        (sum(p.numel() for p in m.parameters()), name)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and len(m) == layers
    ]
    if not lists:
        raise ValueError(
            f"transformers' model has no list of {layers} layers to match its cache"
        )
    return max(lists)[1]


def _build(cfg: dict, dtype):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    clean = {k: v for k, v in cfg.items() if k != "auto_map"}  # never remote code
    try:
        config = transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(clean)
    except Exception as err:  # noqa: BLE001 - transformers' own refusal, in one line
        raise ValueError(f"transformers does not accept this config: {err}") from None
    last = None
    for extra in ({"experts_implementation": "batched_mm"}, {}):
        try:
            with torch.device("meta"):
                model = transformers.AutoModelForCausalLM.from_config(
                    config, dtype=dtype, **extra
                )
            return config, model.eval()
        except Exception as err:  # noqa: BLE001
            last = err
    raise ValueError(f"transformers could not build this model: {last}") from None


def measure(cfg: dict, bpn: int, name: str) -> tuple[Model, list[str]]:
    """The ``Model`` transformers builds from ``cfg`` at ``bpn`` bytes a number, read
    off the meta device, and the notes saying how."""
    import torch

    dtype = {4: torch.float32, 2: torch.bfloat16, 1: torch.float8_e4m3fn}[bpn]
    if bpn == 2 and str(cfg.get("torch_dtype") or cfg.get("dtype")) == "float16":
        dtype = torch.float16
    config, model = _build(cfg, dtype)
    text = _text_config(config)
    try:
        short, short_next, cache = _run(model, 1)
        from transformers.cache_utils import get_layer_types_and_kwargs

        types, kwargs = get_layer_types_and_kwargs(text)
        windows = [kw.get("sliding_window") or 0 for kw in kwargs]
        long_tokens = max([_SHORT_PROMPT, *(w + 2 for w in windows)])
        long, long_next, _ = _run(model, long_tokens)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - a family that does not run on meta
        raise ValueError(
            f"transformers could not run this model on the meta device: {err}"
        ) from None
    runs = (short, short_next, long, long_next)
    try:
        return _assemble(model, text, cache, types, runs, long_tokens, bpn, name)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - a model this route cannot read
        raise ValueError(f"transformers' model could not be read here: {err}") from None


def _layer_cache(i: int, runs, long_tokens: int) -> tuple[int, int | None, FixedState]:
    """(numbers a token, tokens kept or None, fixed state) of cache layer ``i``."""
    (a, a32), (b, b32), (n, n32), (m, m32) = (run[i] for run in runs)
    grow = b - a
    if b32 != a32 or m32 != n32 or grow < 0:
        raise ValueError(f"layer {i}'s cache grows in float32: not counted here")
    fixed = a - grow
    if m - n == grow and n == fixed + long_tokens * grow:
        return grow, None, FixedState(model_format=fixed, float32=a32)
    kept, rest = divmod(n - fixed, grow) if grow else (0, n - fixed)
    if m != n or rest or (grow and kept >= long_tokens):
        raise ValueError(
            f"layer {i}'s cache grows in a way this calculator does not follow"
        )
    return grow, kept, FixedState(model_format=fixed, float32=a32)


def _assemble(model, text, cache, types, runs, long_tokens, bpn, name):
    """The measured layout: blocks from the layer list, parts from the cache."""
    layers = len(cache.layers)
    prefix = _layer_list(model, layers) + "."
    heads = 0
    blocks_numbers = [0] * layers
    experts: dict[int, dict] = {}
    outside = outside32 = 0
    for pname, p in model.named_parameters():
        f32 = p.element_size() == 4 and bpn != 4
        if p.element_size() not in (bpn, 4):
            raise ValueError(
                f"parameter {pname} is held as {p.dtype}: not counted here"
            )
        if not pname.startswith(prefix):
            outside += p.numel()
            outside32 += p.numel() if f32 else 0
            continue
        index, rest = pname[len(prefix):].split(".", 1)
        i = int(index)
        parts = rest.split(".")
        if "experts" in parts[:-1]:
            e = experts.setdefault(i, {"numbers": 0, "f32": 0, "count": 0})
            after = parts[parts.index("experts") + 1]
            count = int(after) + 1 if after.isdigit() else p.shape[0]
            e["count"] = max(e["count"], count)
            e["numbers"] += p.numel()
            e["f32"] += p.numel() if f32 else 0
        else:
            blocks_numbers[i] += p.numel()
            outside32 += p.numel() if f32 else 0
    blocks = []
    for i in range(layers):
        per_token, cap, fixed = _layer_cache(i, runs, long_tokens)
        layer = cache.layers[i]
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        pair = kv_heads = head_dim = 0
        layer_heads = _heads(text, i, heads)
        if per_token and keys is not None and values is not None:
            pair = layer_heads * (keys.shape[-1] + values.shape[-1])
            kv_heads = keys.shape[1] if keys.dim() == 4 else 1
            head_dim = keys.shape[-1]
        states = getattr(layer, "recurrent_states", {})
        recurrent = sum(t.numel() for t in _floats(states))
        kind = (
            MixerKind.RUNNING_SUMMARY
            if types[i] in _SUMMARY_KINDS
            else MixerKind.ATTENTION
        )
        mixer = MeasuredMixer(
            kind_of_mixing=kind, label=types[i], numbers=blocks_numbers[i],
            per_token=per_token, cap=cap, fixed=fixed, pair_numbers=pair,
            summary=recurrent, heads=layer_heads if pair else 0, kv_heads=kv_heads,
            head_dim=head_dim,
        )
        ffn = None
        if i in experts:
            e = experts[i]
            ffn = MeasuredExperts(
                count=e["count"], per_token=_top_k(text, i),
                per_expert=e["numbers"] // e["count"], float32=e["f32"],
            )
            if ffn.parameters != e["numbers"] or ffn.per_token > ffn.count:
                raise ValueError(f"layer {i}'s experts are not all of one size")
        blocks.append(Block(mixer=mixer, ffn=ffn, norms=0))
    inputs = model.get_input_embeddings()
    head = model.get_output_embeddings()
    tied = head is not None and inputs is not None and head.weight is inputs.weight
    layout = MeasuredLayout(
        vocab=int(getattr(text, "vocab_size", 0) or 0),
        width=int(getattr(text, "hidden_size", 0) or 0),
        blocks=tuple(blocks), tied=tied, final_norm=0, norm_numbers=0,
        norm="the norms transformers builds", family=f"{type(model).__name__}",
        outside=outside, outside_float32=outside32,
    )
    return Model(layout=layout, bytes_per_number=bpn, name=name, route="transformers")
