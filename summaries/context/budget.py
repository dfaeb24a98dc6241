"""Fitting a context into its token budget, a hard cap.

The question, the layout and the recent exchanges come first; then the
optional pieces (retrieved exchanges, summary rows, the digest) are taken in
the order the builder gives (its priority), each while it still fits, so
the budget is filled rather than merely respected: a piece too large for
what is left is passed over for smaller ones after it. Costs are estimated
from token counts stored with the rows; the rendered prompt is counted
exactly once more, and pieces are given back, lowest priority first, until
the exact count fits. Only when the question and the layout alone leave no
room is the recent window trimmed, oldest exchange first; a question that
does not fit even alone is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings

from sessions_app.tokens import count_tokens
from summaries.context.layout import RETRIEVED_HEADER, SECTION_SEPARATOR, SUMMARY_HEADER, Exchange

#: Slack per piece for tokens that form differently where pieces are joined.
JOIN_SLACK = 1
#: Pieces tried by exact count after the estimates passed them over (each
#: try renders and counts the prompt), and how far over the room their
#: estimate may be to deserve a try.
EXACT_TRIES = 1
ESTIMATE_MARGIN = 12
#: The least room (and share of the budget, 1/25) worth another count of the whole prompt.
TOP_UP_MIN_TOKENS = 24
#: Pieces whose texts are read with the first choice, for the top-up.
READ_AHEAD = 6
#: What opening a section costs: its heading and the separator before it.
HEADING_COST = {
    "retrieved": count_tokens(RETRIEVED_HEADER + "\n" + SECTION_SEPARATOR),
    "summary": count_tokens(SUMMARY_HEADER + "\n" + SECTION_SEPARATOR),
}


class ContextTooLarge(ValueError):
    """The question and the prompt's fixed text alone exceed the budget."""

    def __init__(self, *, budget: int, needed: int) -> None:
        super().__init__(
            f"The question alone needs {needed} tokens of context, more than the budget of {budget}."
        )
        self.budget = budget
        self.needed = needed


@dataclass(frozen=True, slots=True)
class Piece:
    kind: str  # "summary", "digest" or "retrieved"
    id: int | None
    text: str
    cost: int  # estimated tokens, with its separator


@dataclass(slots=True)
class Fitted:
    kept: list[Piece]
    left_out: list[Piece]
    recent: list[Exchange]
    prompt: str
    token_count: int


Render = Callable[[Sequence[Piece], Sequence[Exchange]], str]
# (the pieces chosen, the pieces likely to be tried next) -> the chosen, with their texts
Complete = Callable[[list[Piece], Sequence[Piece]], list[Piece]]


def fit(
    *,
    budget: int,
    recent: Sequence[Exchange],
    pieces: Sequence[Piece],
    render: Render,
    complete: Complete = lambda kept, upcoming: list(kept),
) -> Fitted:
    """The prompt within ``budget``: see the module docstring. ``pieces`` in
    priority order; their text may be left empty until chosen: ``complete``
    fills in the text of the pieces kept, and may read ahead those likely
    to be tried next, so the top-up below needs no second read."""
    recent = list(recent)
    prompt = render([], recent)
    used = count_tokens(prompt)
    while used > budget and recent:
        recent = recent[1:]
        prompt = render([], recent)
        used = count_tokens(prompt)
    if used > budget:
        raise ContextTooLarge(budget=budget, needed=used)

    kept, left_out = _take(pieces, room=budget - used, open_sections=set())
    estimated = sum(piece.cost + JOIN_SLACK for piece in kept)
    kept = complete(kept, left_out[:READ_AHEAD])
    prompt = render(kept, recent)
    token_count = count_tokens(prompt)
    while token_count > budget and kept:
        left_out.insert(0, kept.pop())
        prompt = render(kept, recent)
        token_count = count_tokens(prompt)
    # The estimates err on the safe side: take what fits in the room the
    # exact count leaves, in the same order, and count again. The room is
    # measured in estimated tokens, by how far the estimates overshot ...
    # Only when the room is worth another count of the whole prompt.
    overshoot = estimated / (token_count - used) if token_count > used and estimated else 1.0
    room = int((budget - token_count) * max(1.0, overshoot))
    worth_it = budget - token_count >= max(TOP_UP_MIN_TOKENS, budget // 25)
    more, rest = (
        _take(left_out, room=room, open_sections={_section(p) for p in kept}) if worth_it else ([], left_out)
    )
    if more:
        wider = complete([*kept, *more], ())
        wider_prompt = render(wider, recent)
        wider_count = count_tokens(wider_prompt)
        while wider_count > budget and len(wider) > len(kept):
            rest.insert(0, wider.pop())
            wider_prompt = render(wider, recent)
            wider_count = count_tokens(wider_prompt)
        kept, left_out, prompt, token_count = wider, rest, wider_prompt, wider_count
    # ... then try, by exact count, a few pieces the estimates say are just too large.
    tries = 0 if not more else EXACT_TRIES  # the top-up already counted again
    for piece in list(left_out):
        if tries == EXACT_TRIES:
            break
        if piece.cost - ESTIMATE_MARGIN > budget - token_count:
            continue
        tries += 1
        wider = complete([*kept, piece], ())
        wider_prompt = render(wider, recent)
        wider_count = count_tokens(wider_prompt)
        if wider_count <= budget:
            kept, prompt, token_count = wider, wider_prompt, wider_count
            left_out.remove(piece)
    return Fitted(kept=kept, left_out=left_out, recent=recent, prompt=prompt, token_count=token_count)


def _take(pieces: Sequence[Piece], *, room: int, open_sections: set[str]) -> tuple[list[Piece], list[Piece]]:
    """The pieces whose estimated costs fit ``room``, in order, and the rest."""
    taken: list[Piece] = []
    rest: list[Piece] = []
    for piece in pieces:
        # A piece that opens its section also pays for the section's heading.
        section = _section(piece)
        cost = piece.cost + JOIN_SLACK + (0 if section in open_sections else HEADING_COST[section])
        if cost <= room:
            taken.append(piece)
            open_sections.add(section)
            room -= cost
        else:
            rest.append(piece)
    return taken, rest


def _section(piece: Piece) -> str:
    # Another chat's summary row is quoted among that chat's exchanges (summaries.context.lent).
    return "retrieved" if piece.kind in ("retrieved", "lent_summary") else "summary"


def turn_budget(budget: int | None, *, besides: Sequence[str] = ()) -> int:
    """The budget of a chat turn's context: the caller's (``CONTEXT_DEFAULT_BUDGET``
    when None), never over ``CHAT_MAX_PROMPT_TOKENS``, less the tokens of the
    texts the turn sends ``besides`` the context (system messages), so the
    whole prompt stays within both. At least 1: a context that cannot fit
    is refused by ``build_context`` (``ContextTooLarge``), never sent."""
    wanted = settings.CONTEXT_DEFAULT_BUDGET if budget is None else budget
    reserved = sum(count_tokens(text) for text in besides)
    return max(1, min(wanted, settings.CHAT_MAX_PROMPT_TOKENS) - reserved)
