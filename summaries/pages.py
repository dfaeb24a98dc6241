"""The chat window: a session's history, its summary cards and the chat box.

It lives with summaries because it shows them and runs the chat turn. The
page is rendered on the server; everything that changes while it is open
(the streamed reply, summary cards, the summarization state, search results,
the context inspector) comes from the REST API, called by ``static/nexus/chat.js`` with
the session cookie and the CSRF token.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from rest_framework.pagination import Cursor, CursorPagination

from nexus.web import not_found_as_404, with_csp
from notes.selectors import notes_made_by
from sessions_app.models import ChatSession, Episode
from sessions_app.selectors import session_for_user
from sessions_app.shown_metadata import show_metadata
from summaries.api.serializers import SummarizationStatusSerializer
from summaries.models import Summary
from summaries.selectors import summarization_status

# The chat page renders this many recent episodes; older ones load on demand.
HISTORY_PAGE_SIZE = 30
# Summarization states in which the page shows "Summarising…".
ACTIVE_STATES = frozenset({"queued", "running"})


@with_csp
@not_found_as_404
@login_required
@require_http_methods(["GET"])
def session_chat(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    session = session_for_user(request.user, session_uuid, queryset=ChatSession.objects.with_stats())

    # The most recent part of the history, shown oldest first; one extra row
    # tells whether there is anything earlier to load.
    recent = list(Episode.objects.for_session(session.pk).newest_first()[: HISTORY_PAGE_SIZE + 1])
    has_earlier = len(recent) > HISTORY_PAGE_SIZE
    episodes = show_metadata(reversed(recent[:HISTORY_PAGE_SIZE]))
    # "Memory updated: …" under the exchanges that made a note (one query).
    made = notes_made_by([ep.pk for ep in episodes])
    for ep in episodes:
        ep.notes_made = made.get(ep.pk, [])
    summaries = list(Summary.objects.chain(session.pk))
    # Rendered with the page so a run already under way shows at once; the
    # script keeps it current from the API.
    status = summarization_status(session, viewer=request.user)

    urls = _api_urls(session)
    config: dict[str, Any] = {
        "sessionId": str(session.uuid),
        "urls": urls,
        "hasEarlier": has_earlier,
        "earlierUrl": _earlier_episodes_url(urls["episodes"], episodes[0].pk) if has_earlier else None,
        # The same payload the status endpoint answers, so the script can
        # tell when a later answer differs.
        "status": dict(SummarizationStatusSerializer(status).data),
    }
    return render(
        request,
        "sessions/chat.html",
        {
            "session": session,
            "episodes": episodes,
            "has_earlier": has_earlier,
            "summaries": summaries,
            "status": status,
            "summarising": status["state"] in ACTIVE_STATES,
            "chat_config": config,
        },
    )


def _api_urls(session: ChatSession) -> dict[str, str]:
    args = [str(session.uuid)]
    return {
        "session": reverse("api-session-detail", args=args),
        "chat": reverse("api-session-chat", args=args),
        "episodes": reverse("api-episode-list", args=args),
        "summaries": reverse("api-session-summaries", args=args),
        "status": reverse("api-summary-status", args=args),
        "context": reverse("api-session-context", args=args),
        "search": reverse("api-session-search", args=args),
        "list": reverse("session-list"),
        "notes": reverse("api-note-list"),
        "memory": reverse("memory"),
        "login": reverse("login"),
    }


def _earlier_episodes_url(episodes_url: str, first_shown_id: int) -> str:
    """The API's cursor link to the page of episodes just before ``first_shown_id``.

    The episode list is cursor-paginated oldest first; a reversed cursor at
    that id is the "previous" page a client reaches by paging back, and each
    answer carries the next such link in ``previous``.
    """
    paginator = CursorPagination()
    paginator.base_url = f"{episodes_url}?page_size={HISTORY_PAGE_SIZE}"
    return paginator.encode_cursor(Cursor(offset=0, reverse=True, position=str(first_shown_id)))
