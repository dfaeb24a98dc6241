"""The chat session admin, with what needs summaries: the summarization
state, the session's summary chain inline, and the rebuild action.

``sessions_app.admin`` registers the session admin of sessions alone; this
module replaces that registration with the extended one (the admin's
documented ``unregister``/``register``), so the session pages keep their URLs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import ngettext

from sessions_app.admin import PREVIEW_CHARS, ChatSessionAdmin, preview
from sessions_app.models import ChatSession
from summaries import triggers
from summaries.model_cap import ModelCallCapReached
from summaries.models import SummarizationState, Summary

SUMMARY_ROWS_INLINE = 50

T = TypeVar("T")


def queue_all(
    model_admin: admin.ModelAdmin, request: HttpRequest, items: Iterable[T], queue: Callable[[T], None]
) -> bool:
    """An admin action's ``queue(item)`` for every item, in one transaction:
    the services enqueue on commit, so all go out together, or none. False,
    and the reason shown, while the staff member is at the model-call cap."""
    try:
        with transaction.atomic():
            for item in items:
                queue(item)
    except ModelCallCapReached as err:
        model_admin.message_user(request, err.message, messages.ERROR)
        return False
    return True


def queue_chain_rebuilds(
    model_admin: admin.ModelAdmin, request: HttpRequest, sessions: list[ChatSession]
) -> None:
    """The rebuild action of the session and the summary lists: queue a
    rebuild of each session's chain and say how many were queued (none, and
    why, while the staff member is at the model-call cap)."""
    if not queue_all(
        model_admin,
        request,
        sessions,
        lambda session: triggers.session_rebuild(session=session, actor=request.user),
    ):
        return
    count = len(sessions)
    model_admin.message_user(
        request,
        ngettext(
            "Queued a rebuild of %d session's summary chain.",
            "Queued a rebuild of %d sessions' summary chains.",
            count,
        )
        % count,
        messages.SUCCESS,
    )


class LatestRowsFormSet(BaseInlineFormSet):
    """Only the newest ``SUMMARY_ROWS_INLINE`` rows: a long session's chain
    can run to thousands of rows; the rest are in the summary list."""

    def get_queryset(self) -> QuerySet:
        if not hasattr(self, "_latest_rows"):
            self._latest_rows = super().get_queryset()[:SUMMARY_ROWS_INLINE]
        return self._latest_rows


class SummaryInline(admin.TabularInline):
    """The session's chain, newest row first, read here and edited on each
    row's own page (where an edit is kept as a revision)."""

    model = Summary
    formset = LatestRowsFormSet
    fields = ("episode_range", "content_preview", "token_count", "curated", "model", "updated_at")
    readonly_fields = fields
    ordering = ("-first_episode_id", "-pk")
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name = "summary row"
    verbose_name_plural = "summary chain"

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .select_related("session")  # each row is named by its session's title
            .defer("content")
            .annotate(content_head=Left("content", PREVIEW_CHARS + 1))
        )

    @admin.display(description="exchanges")
    def episode_range(self, obj: Summary) -> str:
        return obj.exchanges

    @admin.display(description="content")
    def content_preview(self, obj: Summary) -> str:
        return preview(obj.content_head)


class SessionSummariesAdmin(ChatSessionAdmin):
    list_display = (
        "__str__",
        "uuid_display",
        "owner",
        "episode_count",
        "total_tokens",
        "last_episode_id",
        "summary_state",
        "updated_at",
        "episodes_link",
        # Whose memory: after the columns whose places sorting links name.
        "end_user",
        "memory_scope",
    )
    list_select_related = ("owner", "summarization")
    fields = (
        "uuid",
        "owner",
        "title",
        "metadata",
        ("end_user", "memory_scope"),
        ("episode_count", "total_tokens", "last_episode_id"),
        "summary_state",
        ("episodes_link", "summaries_link"),
        ("created_at", "updated_at"),
    )
    readonly_fields = (
        "uuid",
        "owner",
        "end_user",
        "memory_scope",
        "episode_count",
        "total_tokens",
        "last_episode_id",
        "summary_state",
        "episodes_link",
        "summaries_link",
        "created_at",
        "updated_at",
    )
    inlines = (SummaryInline,)
    actions = ("rebuild_chains",)

    @admin.display(description="summarization", ordering="summarization__state")
    def summary_state(self, obj: ChatSession) -> str:
        try:
            state = obj.summarization
        except SummarizationState.DoesNotExist:
            # No state row yet: nothing was ever queued for this session.
            return SummarizationState.State.IDLE.label
        if state.state == SummarizationState.State.FAILED and state.last_error:
            return f"{state.get_state_display()}: {preview(state.last_error, 60)}"
        return state.get_state_display()

    @admin.display(description="summary rows")
    def summaries_link(self, obj: ChatSession) -> str:
        url = reverse("admin:summaries_summary_changelist") + "?" + urlencode({"session": str(obj.uuid)})
        return format_html(
            '<a href="{}">All summary rows</a> (the newest {} are listed below)', url, SUMMARY_ROWS_INLINE
        )

    @admin.action(description="Rebuild the summary chains of selected sessions", permissions=["change"])
    def rebuild_chains(self, request: HttpRequest, queryset: QuerySet) -> None:
        queue_chain_rebuilds(self, request, list(queryset.order_by("pk")))


admin.site.unregister(ChatSession)
admin.site.register(ChatSession, SessionSummariesAdmin)
