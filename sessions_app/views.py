"""Web pages: the session list, renaming and deleting a session.

The chat window (which shows summaries and runs the chat turn) lives with
them in ``summaries.pages``.
"""

from __future__ import annotations

import uuid

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from nexus.web import not_found_as_404, with_csp
from sessions_app import services
from sessions_app.models import ChatSession, MemoryScope
from sessions_app.selectors import session_for_user

# The list page shows this many sessions, most recently active first.
SESSION_LIST_LIMIT = 100

TITLE_MAX_CHARS = ChatSession._meta.get_field("title").max_length
TITLE_TOO_LONG = f"A title can be at most {TITLE_MAX_CHARS} characters long."
CHOOSE_MEMORY = "Choose what the chat remembers."


class SessionTitleForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX_CHARS, required=False, strip=True)


class NewSessionForm(SessionTitleForm):
    # Left out (an older page, a script): SESSION_MEMORY_DEFAULT.
    memory_scope = forms.ChoiceField(choices=MemoryScope.choices, required=False)


class MemoryScopeForm(forms.Form):
    memory_scope = forms.ChoiceField(choices=MemoryScope.choices)


@with_csp
@login_required
@require_http_methods(["GET", "POST"])
def session_list(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = NewSessionForm(request.POST)
        if form.is_valid():
            session = services.session_create(
                owner=request.user,
                title=form.cleaned_data["title"],
                memory_scope=form.cleaned_data["memory_scope"] or settings.SESSION_MEMORY_DEFAULT,
            )
            return redirect("session-chat", session_uuid=session.uuid)
        messages.error(request, TITLE_TOO_LONG if "title" in form.errors else CHOOSE_MEMORY)
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
            "memory_default": settings.SESSION_MEMORY_DEFAULT,
        },
    )


@with_csp
@not_found_as_404
@login_required
@require_POST
def session_memory(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    """The chat header's switch: what the chat remembers (``memory_scope``)."""
    session = session_for_user(request.user, session_uuid, change=True)
    form = MemoryScopeForm(request.POST)
    if form.is_valid():
        # No message on success: the switch itself shows the new state (a
        # message would lie over the chat header until it fades).
        services.session_update(session=session, memory_scope=form.cleaned_data["memory_scope"])
    else:
        messages.error(request, CHOOSE_MEMORY)
    return redirect("session-chat", session_uuid=session.uuid)


@with_csp
@not_found_as_404
@login_required
@require_POST
def session_rename(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    session = session_for_user(request.user, session_uuid, change=True)
    form = SessionTitleForm(request.POST)
    if not form.is_valid():
        messages.error(request, TITLE_TOO_LONG)
    else:
        services.session_update(session=session, title=form.cleaned_data["title"])
        messages.success(request, "Session renamed.")
    return redirect(_safe_next(request, reverse("session-list")))


@with_csp
@not_found_as_404
@login_required
@require_http_methods(["GET", "POST"])
def session_delete(request: HttpRequest, session_uuid: uuid.UUID) -> HttpResponse:
    # The stats are only shown on the confirmation page.
    queryset = ChatSession.objects.with_stats() if request.method == "GET" else None
    session = session_for_user(request.user, session_uuid, queryset=queryset, change=True)
    if request.method == "POST":
        title = str(session)
        services.session_delete(session=session)
        messages.success(request, f"Deleted “{title}”.")
        return redirect("session-list")
    return render(request, "sessions/confirm_delete.html", {"session": session})


def _safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
