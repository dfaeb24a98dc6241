"""What a chat turn stores in its episode's metadata, the same for every way of chatting."""

from __future__ import annotations

from typing import Any

from sessions_app.models import ChatSession
from summaries.context import ContextResult
from summaries.inference import Completion
from summaries.offline_memory import shown_memory


def turn_metadata(
    *, source: str, completion: Completion, context: ContextResult, session: ChatSession, question: str
) -> dict[str, Any]:
    """Where the turn came from (``source``), the model and the token figures;
    for an offline reply also what memory found for ``question``
    (``summaries.offline_memory``), kept here and never in the reply."""
    return {
        "source": source,
        "model": completion.model,
        "context_tokens": context.token_count,
        "completion_tokens": completion.completion_tokens,
        **shown_memory(completion=completion, session_pk=session.pk, context=context, question=question),
    }
