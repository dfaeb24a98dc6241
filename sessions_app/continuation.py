"""Whether a passage continues the one before it: a list after its
lead-in, the next step of a list, a sentence that leans on the last
("It", "This", "But", "so"), the rest of a code block. A passage quoted
alone loses what its continuation says ("Run these commands:" without the
commands), so a continuing neighbour of a passage that matters is lifted
(``lift``) when a long exchange is cut (``sessions_app.excerpts``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: The share of a passage's score its continuing neighbour gets on top of its own.
NEIGHBOUR_SHARE = 0.5

_LEANING = re.compile(
    r"^(?:and|but|so|then|also|it|its|this|that|these|those|they|them|which|there|here|otherwise|"
    r"instead|after that|once|if so|because)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^(?:[-*•]\s|\d+[.)]\s)")


def continues(before: str, after: str) -> bool:
    """Whether ``after`` (the passage right after ``before``, on the same side) continues it."""
    before, after = before.rstrip(), after.lstrip()
    if not before or not after:
        return False
    if before.endswith((":", ",", ";")) or before.count("```") % 2:
        return True  # a lead-in, an unfinished sentence, an open code block
    if _LIST_ITEM.match(after) and _LIST_ITEM.match(before.splitlines()[-1].lstrip()):
        return True  # the next item of a list
    return bool(_LEANING.match(after)) or after[0].islower()


def lift(scores: Sequence[float], follows: Sequence[bool]) -> list[float]:
    """``scores`` with each continuing passage (``follows[i]``: passage i
    continues passage i - 1) given ``NEIGHBOUR_SHARE`` of its predecessor's
    score on top of its own."""
    lifted = list(scores)
    for i in range(1, len(scores)):
        if follows[i] and scores[i - 1] > 0:
            lifted[i] = scores[i] + NEIGHBOUR_SHARE * scores[i - 1]
    return lifted
