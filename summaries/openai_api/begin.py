"""The start of a turn on either endpoint: its session and its memory.

The session comes from ``session_for_request``, the rules chat completions
and Responses share. A ``store: false`` request reads the memory a stored
one would read, by those same rules, and leaves nothing behind: the session
is resolved and the memory built inside a transaction that is then rolled
back, so whatever the resolution writes (a session made on first use, the
request's earlier exchanges imported into a new one) is undone, while the
memory built from it is kept for the model. A session that existed before
stays the turn's session; one that would have been new is ``None``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app.models import ChatSession
from summaries.openai_api.request import ChatRequest
from summaries.openai_api.sessions import session_for_request
from summaries.openai_api.turn import PreparedTurn, turn_prepare


def turn_begin(*, caller: Any, request: ChatRequest) -> PreparedTurn:
    """The turn's session and memory (``SessionNotFound``, ``ContextTooLarge`` as for a stored turn)."""
    if request.store:
        session, _ = session_for_request(caller=caller, request=request)
        return turn_prepare(caller=caller, session=session, request=request)
    with transaction.atomic():
        session, _ = session_for_request(caller=caller, request=request)
        turn = turn_prepare(caller=caller, session=session, request=request)
        transaction.set_rollback(True)
    if not ChatSession.objects.filter(pk=session.pk).exists():
        turn.session = None
    return turn
