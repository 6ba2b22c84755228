"""The serving report made about a split throughout.

``report.report`` counts one chip; when a split is asked for, every figure a user reads
(what fits, the longest conversation, the times a token, the throughput, a request's
times, and the in-page form's pictures, which read the same keys) is replaced by the
split's, so the report never says one thing at its top and another at its bottom. The
one-chip figures stay under ``one_chip``, labelled so. Keys keep their meaning for the
deployment asked for: ``weight_bytes`` is still the whole model's weights, and the
per-device figures sit beside them (``weight_bytes_per_device``,
``cache_bytes_per_device``).
"""

from __future__ import annotations

__all__ = ["split_report", "SCOPES"]

SCOPES = ("one chip", "split")
"""What a report's figures are about (its ``scope``)."""


def _decode(row: dict, prefill: dict | None) -> dict:
    return {
        "context": row["context"],
        "seconds_per_token": row["seconds_per_token"],
        "tokens_per_s": 1 / row["seconds_per_token"],
        "arithmetic_seconds": row["arithmetic_seconds"],
        "reading_seconds": row["reading_seconds"],
        "communication_seconds": row["communication_seconds"],
        "limited_by": row["limited_by"],
        "prefill_seconds": prefill["seconds"] if prefill else None,
    }


def _throughput(row: dict) -> dict:
    return {
        "context": row["context"],
        "batch": row["batch"],
        "tokens_per_s": row["tokens_per_s"],
        "wait_seconds": row["seconds_per_token"],
        "limited_by": row["limited_by"],
        "memory_bytes": row["memory_bytes_per_device"],
        "fits": row["fits"],
    }


def split_report(result: dict, split: dict) -> dict:
    """``result`` (one chip's report) with its figures replaced by the ``split``'s
    (``serving_split``), the one-chip figures kept under ``one_chip``."""
    out = dict(result)
    out["scope"] = "split"
    out["one_chip"] = {
        "weights_fit": result["weights_fit"],
        "chips_for_weights": result["chips_for_weights"],
        "usable_bytes": result["serving"]["usable_bytes"],
        "cache_budget_bytes": result["serving"]["cache_budget_bytes"],
        "longest_conversation": result["longest_conversation"],
    }
    fits = split["weights_fit"]
    per_device = split["weight_bytes_per_device"]
    usable = split["usable_bytes_per_device"]
    out["weights_fit"] = fits
    out["weight_bytes_per_device"] = per_device
    out["splits_that_fit"] = result["splits_that_fit"] if not fits else None
    out["serving"] = {**result["serving"], "usable_bytes": usable,
                      "cache_budget_bytes": usable - per_device if fits else 0}
    by_tokens = {r["tokens"]: r for r in split["lengths"]}
    out["lengths"] = [
        {**row, "cache_bytes_per_device": by_tokens[row["tokens"]][
            "cache_bytes_per_device"],
         "conversations_that_fit": by_tokens[row["tokens"]]["conversations_that_fit"]}
        for row in result["lengths"]
    ]
    out["longest_conversation"] = split["longest_conversation"]
    limit = result["context_limit"]["tokens"] if result["context_limit"] else None
    longest = out["longest_conversation"]
    out["longest_conversation_beyond_context_limit"] = (
        limit is not None and longest is not None and longest > limit)
    out["fit_by_batch"] = split["fit_by_batch"]
    prefill = {r["context"]: r for r in split["prefill"]}
    out["decode"] = [_decode(r, prefill.get(r["context"])) for r in split["decode"]]
    out["throughput"] = [_throughput(r) for r in split["throughput"]]
    out["requests"] = [dict(r) for r in split["requests"]]
    for row in out["decode"] + out["throughput"]:
        row["beyond_context_limit"] = limit is not None and row["context"] > limit
    for row in out["requests"]:
        row["beyond_context_limit"] = (
            limit is not None and row["prompt"] + row["answer"] > limit)
    out["split"] = split
    return out
