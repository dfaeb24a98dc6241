"""The recent window as a share of the budget, not a count.

An assistant's exchanges run to a thousand tokens and more: eight of them
filled a 2,000-token context before anything older could be quoted. So the
window keeps the newest exchange always, then the rest of the last
``CONTEXT_RECENT_EPISODES``, newest first, while they fit in
``CONTEXT_RECENT_SHARE`` of the budget. The older part of the window that
does not fit is not lost: it joins the exchanges retrieval may quote.

The newest exchange alone may be longer than the share (a pasted log, a
reply of two thousand tokens): it is then cut to its passages like a long
retrieved exchange, but the part kept is its newest, not the one that
matches the question, since the next message follows on from it: what the
user said (its end, when it alone is over half the share) and the end of
the reply. Neither dropped nor quoted whole over the share, it leaves the
rest of the budget to what retrieval finds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from sessions_app.semantic.passages import passage_spans
from sessions_app.tokens import count_tokens
from summaries.context.layout import SECTION_SEPARATOR, Exchange, cut_exchange

# What a pair's labels and separator add to its episode's tokens.
PAIR_LABEL_TOKENS = count_tokens("Q10: \nA10: " + SECTION_SEPARATOR)
#: What the ``…`` marks of a cut newest exchange may add to its tokens.
CUT_MARK_TOKENS = 6
#: The least share of a cut newest exchange's room its user's message gets
#: when both sides are long; the message takes more when the reply is short.
USER_SHARE = 0.5

_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Split:
    kept: list[Exchange]  # quoted, oldest first; the newest possibly cut (see ``passages``)
    left: list[Exchange]  # the window's older exchanges its share left to retrieval, oldest first
    # The newest exchange's kept passages when it was cut: episode id -> [[start, end], ...]
    # into user_input + response, as for a retrieved exchange quoted in part.
    passages: dict[int, list[list[int]]] = field(default_factory=dict)


def split_window(recent: Sequence[Exchange], tokens: Mapping[int, int], budget: int) -> Split:
    """``recent`` (oldest first) cut to its share of ``budget``: the newest
    exchange always (by its newest part when it alone is over the share),
    then older ones while they fit, without a gap."""
    room = settings.CONTEXT_RECENT_SHARE * budget
    kept: list[Exchange] = []
    passages: dict[int, list[list[int]]] = {}
    for exchange in reversed(recent):
        cost = tokens.get(exchange.id, 0) + PAIR_LABEL_TOKENS
        if not kept and cost > room:
            spans = newest_part(exchange, int(room) - PAIR_LABEL_TOKENS - CUT_MARK_TOKENS)
            if spans is not None:
                exchange = cut_exchange(exchange, spans)
                passages[exchange.id] = [[start, end] for start, end in spans]
            cost = count_tokens(exchange.user_input) + count_tokens(exchange.response) + PAIR_LABEL_TOKENS
        elif kept and cost > room:
            break
        kept.append(exchange)
        room -= cost
    kept.reverse()
    return Split(kept=kept, left=list(recent[: len(recent) - len(kept)]), passages=passages)


def newest_part(exchange: Exchange, room: int) -> list[tuple[int, int]] | None:
    """The ``[start, end)`` offsets (into ``user_input + response``) of the
    newest part of ``exchange`` that fits ``room`` tokens: the user's message
    whole when it fits what the reply leaves (at least ``USER_SHARE`` of the
    room), else its last passages; then the reply's last passages in what
    is left. None when the whole exchange fits (nothing to cut)."""
    room = max(room, 0)
    user, response = exchange.user_input, exchange.response
    user_tokens, response_tokens = count_tokens(user), count_tokens(response)
    if user_tokens + response_tokens <= room:
        return None
    user_room = max(int(room * USER_SHARE), room - response_tokens)
    user_span = _whole(user) if user_tokens <= user_room else _tail(user, user_room)
    used = count_tokens(user[user_span[0] : user_span[1]]) if user_span else 0
    response_span = _tail(response, room - used)
    shift = len(user)
    spans = [user_span] if user_span else []
    if response_span:
        spans.append((response_span[0] + shift, response_span[1] + shift))
    return spans


def _whole(text: str) -> tuple[int, int] | None:
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return (start, end) if end > start else None


def _tail(text: str, room: int) -> tuple[int, int] | None:
    """The last passages of ``text`` that fit ``room`` tokens, as one span;
    when the last passage alone is longer, its last words that fit."""
    spans = passage_spans(text)
    if not spans or room <= 0:
        return None
    end = spans[-1][1]
    start = None
    for begin, _ in reversed(spans):
        if count_tokens(text[begin:end]) > room:
            break
        start = begin
    if start is None:
        start = _last_words(text, spans[-1][0], end, room)
    return (start, end) if start is not None and start < end else None


def _last_words(text: str, begin: int, end: int, room: int) -> int | None:
    """The earliest word start in ``text[begin:end]`` from which the rest
    fits ``room`` tokens (a binary search: a few counts, whatever the length)."""
    starts = [match.start() for match in _WORD.finditer(text, begin, end)]
    low, high, found = 0, len(starts) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if count_tokens(text[starts[middle] : end]) <= room:
            found, high = starts[middle], middle - 1
        else:
            low = middle + 1
    return found


def window_may_not_hold(*, total_tokens: int, budget: int) -> bool:
    """Whether the counters say the window may leave exchanges to retrieval
    (so retrieval is worth starting before the window is read)."""
    return total_tokens + PAIR_LABEL_TOKENS > settings.CONTEXT_RECENT_SHARE * budget
