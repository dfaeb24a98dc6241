"""Web pages: the session list and the chat window.

The pages are rendered on the server; everything that changes while a page
is open (the streamed reply, summary cards, the summarization state, the
context inspector) comes from the REST API, called by ``static/nexus/chat.js``
with the session cookie and the CSRF token.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.pagination import Cursor, CursorPagination

from sessions_app import services
from sessions_app.models import ChatSession, Episode
from sessions_app.selectors import session_for_user
from summaries.api.serializers import SummarizationStatusSerializer
from summaries.models import Summary
from summaries.selectors import summarization_status

# The list page shows this many sessions, most recently active first.
SESSION_LIST_LIMIT = 100
# The chat page renders this many recent episodes; older ones load on demand.
HISTORY_PAGE_SIZE = 30
# Summarization states in which the page shows "Summarising…".
ACTIVE_STATES = frozenset({"queued", "running"})

# Scripts and styles come only from our own static files; user and model
# text is escaped everywhere it is shown, and this policy is a second fence.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def with_csp(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return wrapped


TITLE_MAX_CHARS = ChatSession._meta.get_field("title").max_length
TITLE_TOO_LONG = f"A title can be at most {TITLE_MAX_CHARS} characters long."


class SessionTitleForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX_CHARS, required=False, strip=True)


@with_csp
@login_required
@require_http_methods(["GET", "POST"])
def session_list(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SessionTitleForm(request.POST)
        if form.is_valid():
            session = services.session_create(owner=request.user, title=form.cleaned_data["title"])
            return redirect("session-chat", session_uuid=session.uuid)
        messages.error(request, TITLE_TOO_LONG)
        return redirect("session-list")

    # One query: the rows, their owners and their stats together.
    rows = list(
        ChatSession.objects.with_stats()
        .visible_to(request.user)
        .select_related("owner")
        .order_by("-updated_at", "-pk")[: SESSION_LIST_LIMIT + 1]
    )
    return render(
        request,
        "sessions/list.html",
        {
            "sessions": rows[:SESSION_LIST_LIMIT],
            "more_sessions": len(rows) > SESSION_LIST_LIMIT,
            "session_list_limit": SESSION_LIST_LIMIT,
            "form": SessionTitleForm(),
        },
    )


@with_csp
@login_required
@require_POST
def session_rename(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    session = session_for_user(request.user, session_uuid)
    form = SessionTitleForm(request.POST)
    if not form.is_valid():
        messages.error(request, TITLE_TOO_LONG)
    else:
        services.session_update(session=session, title=form.cleaned_data["title"])
        messages.success(request, "Session renamed.")
    return redirect(_safe_next(request, reverse("session-list")))


@with_csp
@login_required
@require_http_methods(["GET", "POST"])
def session_delete(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    # The stats are only shown on the confirmation page.
    queryset = ChatSession.objects.with_stats() if request.method == "GET" else None
    session = session_for_user(request.user, session_uuid, queryset=queryset)
    if request.method == "POST":
        title = str(session)
        services.session_delete(session=session)
        messages.success(request, f"Deleted “{title}”.")
        return redirect("session-list")
    return render(request, "sessions/confirm_delete.html", {"session": session})


@with_csp
@login_required
@require_http_methods(["GET"])
def session_chat(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    session = session_for_user(request.user, session_uuid, queryset=ChatSession.objects.with_stats())

    # The most recent part of the history, shown oldest first; one extra row
    # tells whether there is anything earlier to load.
    recent = list(Episode.objects.for_session(session.pk).order_by("-pk")[: HISTORY_PAGE_SIZE + 1])
    has_earlier = len(recent) > HISTORY_PAGE_SIZE
    episodes = list(reversed(recent[:HISTORY_PAGE_SIZE]))
    summaries = list(Summary.objects.chain(session.pk))
    # Rendered with the page so a run already under way shows at once; the
    # script keeps it current from the API.
    status = summarization_status(session)

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
        "list": reverse("session-list"),
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


def _safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
