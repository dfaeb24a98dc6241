"""Search results as the API shows them: the episode, its session, a snippet and the rank.

``search_visible`` ranks the episodes of every session a user may read
together (``across.rank_visible``); one session's search is ranked as its
context ranks (``sessions_app.session_search``).
Either way the cost is bounded: the ranking's few queries, one for the
episodes found (``found_for``) and one for their snippets.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q

from sessions_app.access import session_confinement
from sessions_app.models import Episode
from sessions_app.search import Hit
from sessions_app.search.across import rank_visible
from sessions_app.search.snippets import Snippet, snippets_for

__all__ = ["Found", "found_for", "search_end_user", "search_visible"]


@dataclass(frozen=True, slots=True)
class Found:
    episode: Episode
    session_uuid: uuid.UUID
    snippet: Snippet
    rank: float


def search_visible(*, user: Any, text: str, limit: int) -> list[Found]:
    """The episodes of every session ``user`` may read that best match ``text``, best first.

    The ranking reads the owner's sessions (the index knows no end user); a
    key bound to an end user is shown only what its sessions hold."""
    hits = rank_visible(user=user, text=text, limit=limit)
    return found_for(hits, within=session_confinement(user, "session__"))


#: A search of one end user's sessions ranks this many times its limit over
#: the owner's, then keeps what is theirs (``search_end_user``).
END_USER_OVERFETCH = 4


def search_end_user(*, user: Any, end_user: str, text: str, limit: int) -> list[Found]:
    """The episodes of ``user``'s own sessions for ``end_user`` (empty: the
    owner in person) that best match ``text``, best first: one person's
    memory, never every person's at once. Ranked over the owner's episodes,
    as the full-text index knows owners, not end users."""
    hits = rank_visible(user=user, text=text, limit=limit * END_USER_OVERFETCH)
    within = session_confinement(user, "session__") & Q(session__owner_id=user.pk, session__end_user=end_user)
    return found_for(hits, within=within)[:limit]


def found_for(hits: list[Hit], *, within: Q | None = None) -> list[Found]:
    """The hits' episodes and snippets, in the hits' order (an episode deleted
    meanwhile, or outside ``within``, is left out)."""
    if not hits:
        return []
    episodes = {
        ep.pk: ep
        for ep in Episode.objects.filter(within or Q(), pk__in=[hit.episode_id for hit in hits])
        .annotate(session_uuid=F("session__uuid"))
        .order_by()
    }
    terms = sorted({term for hit in hits for term in hit.terms})
    snippets = snippets_for(list(episodes.values()), terms)
    return [
        Found(
            episodes[hit.episode_id],
            episodes[hit.episode_id].session_uuid,
            snippets[hit.episode_id],
            hit.score,
        )
        for hit in hits
        if hit.episode_id in episodes
    ]
