"""What a chat turn stores in its episode, the same for every way of chatting:
its metadata, and the model's reply held to ``EPISODE_MAX_CHARS``.

A reply is stored whole up to that limit, as every stored text is (so an
export imports back); a longer one is cut to it, ending in ``CUT_MARKER``,
the cut is recorded in the metadata (``reply_cut_chars``: characters not
stored) and logged. The user's message is never cut: it was held to the
same limit before the model was called. The caller still gets the whole
reply in the answer to its request.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession
from summaries.context import ContextResult
from summaries.inference import Completion
from summaries.offline_memory import shown_memory

logger = logging.getLogger("nexus.chat")

CUT_MARKER = "\n\n[Reply cut here: it was longer than EPISODE_MAX_CHARS characters.]"


def stored_turn(
    *, source: str, completion: Completion, context: ContextResult, session: ChatSession, question: str
) -> tuple[str, dict[str, Any]]:
    """The reply as it is stored (``stored_reply``) and the metadata stored with it (``turn_metadata``)."""
    response, cut = stored_reply(completion.text, session=session)
    metadata = turn_metadata(
        source=source,
        completion=completion,
        context=context,
        session=session,
        question=question,
        reply_cut=cut,
    )
    return response, metadata


def stored_reply(reply: str, *, session: ChatSession) -> tuple[str, int]:
    """``reply`` as it is stored (see the module docstring), and the number of its characters cut."""
    limit = settings.EPISODE_MAX_CHARS
    if len(reply) <= limit:
        return reply, 0
    # A limit shorter than the marker leaves no room for it: the text alone, cut.
    kept = reply[: limit - len(CUT_MARKER)] + CUT_MARKER if limit > 2 * len(CUT_MARKER) else reply[:limit]
    cut = len(reply) - len(kept.removesuffix(CUT_MARKER))
    logger.warning(
        "chat reply cut to EPISODE_MAX_CHARS",
        extra={"session": str(session.uuid), "reply_chars": len(reply), "limit": limit, "cut_chars": cut},
    )
    return kept, cut


def turn_metadata(
    *,
    source: str,
    completion: Completion,
    context: ContextResult,
    session: ChatSession,
    question: str,
    reply_cut: int = 0,
) -> dict[str, Any]:
    """Where the turn came from (``source``), the model and the token figures;
    for an offline reply also what memory found for ``question``
    (``summaries.offline_memory``), kept here and never in the reply; the
    characters of the reply not stored (``reply_cut``), when any were cut."""
    metadata = {
        "source": source,
        "model": completion.model,
        "context_tokens": context.token_count,
        "completion_tokens": completion.completion_tokens,
        **shown_memory(completion=completion, session_pk=session.pk, context=context, question=question),
    }
    if reply_cut:
        metadata["reply_cut_chars"] = reply_cut
    return metadata
