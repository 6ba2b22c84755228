"""Speculative decoding on one chip, priced as the book's section 1.6 prices it
(``transformer_arithmetic.timing.speculative_time_per_token``): a round is k decode
steps of the draft and one check of the target that pushes k + 1 positions of each
conversation through at once (its arithmetic done for every position, its weights read
once for the positions they touch, each cache read once), and yields
(1 - a^(k+1)) / (1 - a) tokens on average (``timing.speculative_tokens_per_step``).
The draft shares the chip: its weights and its caches take memory beside the
target's. Every time is a roofline floor, the draft's and the check's alike.
"""

from __future__ import annotations

from transformer_arithmetic.timing import roofline_time, speculative_tokens_per_step

from ..counting import costs
from . import serving
from ..counting.chips import Chip
from ..anatomy.model import Model
from .serving import Serving

__all__ = ["check_step_time", "speculative_row"]


def check_step_time(model: Model, chip: Chip, context: int, batch: int,
                    positions: int) -> float:
    """Seconds of one check: ``positions`` new positions of each of ``batch``
    conversations of ``context`` tokens through ``model`` at once."""
    tokens = batch * positions
    flops = costs.arithmetic_time(model, chip, context, tokens) * chip.flops_per_s
    nbytes = costs.weight_bytes_read(model, tokens) + batch * costs.cache_bytes(
        model, context)
    return roofline_time(flops, nbytes, chip)


def speculative_row(model: Model, draft: Model, chip: Chip, engine: Serving,
                    context: int, batch: int, k: int, acceptance: float) -> dict:
    """A batch row with a draft of ``k`` tokens accepted with chance ``acceptance``:
    tokens a second with and without, and whether the two models' memory fits."""
    plain = costs.decode_step_time(model, chip, context, batch)
    draft_steps = k * costs.decode_step_time(draft, chip, context, batch)
    check = check_step_time(model, chip, context, batch, k + 1)
    per_round = speculative_tokens_per_step(k, acceptance)
    held = costs.weight_bytes(model) + costs.weight_bytes(draft) + batch * (
        serving.conversation_bytes(model, context, engine)
        + serving.conversation_bytes(draft, context, engine))
    with_draft = batch * per_round / (draft_steps + check)
    return {"context": context, "batch": batch, "draft_tokens": k,
            "acceptance": acceptance, "tokens_per_round": per_round,
            "draft_seconds": draft_steps, "check_seconds": check,
            "round_seconds": draft_steps + check, "plain_step_seconds": plain,
            "tokens_per_s_plain": batch / plain, "tokens_per_s_speculative": with_draft,
            "speedup": with_draft * plain / batch, "pays": with_draft > batch / plain,
            "memory_bytes_with_draft": held,
            "fits_with_draft": held <= serving.usable_bytes(chip, engine)}
