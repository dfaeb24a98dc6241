"""The recent window as a share of the budget, not a count.

An assistant's exchanges run to a thousand tokens and more: eight of them
filled a 2,000-token context before anything older could be quoted. So the
window keeps the newest exchange always, then the rest of the last
``CONTEXT_RECENT_EPISODES``, newest first, while they fit in
``CONTEXT_RECENT_SHARE`` of the budget. The older part of the window that
does not fit is not lost: it joins the exchanges retrieval may quote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

from sessions_app.tokens import count_tokens
from summaries.context.layout import SECTION_SEPARATOR, Exchange

# What a pair's labels and separator add to its episode's tokens.
PAIR_LABEL_TOKENS = count_tokens("Q10: \nA10: " + SECTION_SEPARATOR)


@dataclass(frozen=True, slots=True)
class Split:
    kept: list[Exchange]  # given in full, oldest first
    left: list[Exchange]  # the window's older exchanges its share left to retrieval, oldest first


def split_window(recent: Sequence[Exchange], tokens: Mapping[int, int], budget: int) -> Split:
    """``recent`` (oldest first) cut to its share of ``budget``: the newest
    exchange always, then older ones while they fit, without a gap."""
    room = settings.CONTEXT_RECENT_SHARE * budget
    kept: list[Exchange] = []
    for exchange in reversed(recent):
        cost = tokens.get(exchange.id, 0) + PAIR_LABEL_TOKENS
        if kept and cost > room:
            break
        kept.append(exchange)
        room -= cost
    kept.reverse()
    return Split(kept=kept, left=list(recent[: len(recent) - len(kept)]))


def window_may_not_hold(*, total_tokens: int, budget: int) -> bool:
    """Whether the counters say the window may leave exchanges to retrieval
    (so retrieval is worth starting before the window is read)."""
    return total_tokens + PAIR_LABEL_TOKENS > settings.CONTEXT_RECENT_SHARE * budget
