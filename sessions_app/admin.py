"""Staff admin for chat sessions and episodes.

Every list page is one query for its rows, however many there are: the
session stats come from ``with_stats()`` (correlated subqueries in the same
SELECT), related rows through ``list_select_related``, and episode texts
stay in the database on the list page (previews are cut in SQL).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import ngettext

from sessions_app.admin_filters import ActivityFilter, OwnerFilter, SessionFilter
from sessions_app.models import ChatSession, Episode
from summaries import triggers
from summaries.models import SummarizationState, Summary

PREVIEW_CHARS = 80
SUMMARY_ROWS_INLINE = 50


def preview(head: str | None, limit: int = PREVIEW_CHARS) -> str:
    """Shorten a text fetched as its first ``limit + 1`` characters: the
    extra character tells whether anything was cut."""
    if not head:
        return ""
    return head if len(head) <= limit else head[:limit].rstrip() + "…"


def episodes_url(session: ChatSession, **lookups: int) -> str:
    """The episode list of one session (optionally narrowed to an id range)."""
    query = {"session": str(session.uuid), **lookups}
    return reverse("admin:sessions_app_episode_changelist") + "?" + urlencode(query)


def with_previews(episodes: QuerySet[Episode]) -> QuerySet[Episode]:
    """Episodes with ``user_input_head`` and ``response_head``: the first
    characters of each text, cut by the database (``LEFT``/``SUBSTR``), for ``preview``."""
    return episodes.annotate(
        user_input_head=Left("user_input", PREVIEW_CHARS + 1),
        response_head=Left("response", PREVIEW_CHARS + 1),
    )


def queue_chain_rebuilds(
    model_admin: admin.ModelAdmin, request: HttpRequest, sessions: list[ChatSession]
) -> None:
    """The rebuild action of the session and the summary lists: queue a
    rebuild of each session's chain and say how many were queued."""
    # The service enqueues on commit: all the rebuilds go out together.
    with transaction.atomic():
        for session in sessions:
            triggers.session_rebuild(session=session, actor=request.user)
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


class ReadOnlyAdminMixin:
    """View only: rows here are written by services, never by hand."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


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
            .defer("content")
            .annotate(content_head=Left("content", PREVIEW_CHARS + 1))
        )

    @admin.display(description="episodes")
    def episode_range(self, obj: Summary) -> str:
        return obj.episode_range

    @admin.display(description="content")
    def content_preview(self, obj: Summary) -> str:
        return preview(obj.content_head)


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
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
    )
    list_select_related = ("owner", "summarization")
    search_fields = ("uuid", "title", "owner__username")
    search_help_text = "Search by uuid, title or owner username."
    list_filter = (ActivityFilter, OwnerFilter)
    ordering = ("-updated_at", "-pk")
    fields = (
        "uuid",
        "owner",
        "title",
        "metadata",
        ("episode_count", "total_tokens", "last_episode_id"),
        "summary_state",
        ("episodes_link", "summaries_link"),
        ("created_at", "updated_at"),
    )
    readonly_fields = (
        "uuid",
        "owner",
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

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).with_stats()

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Sessions belong to their owners' chats; they are created there.
        return False

    @admin.display(description="uuid", ordering="uuid")
    def uuid_display(self, obj: ChatSession) -> str:
        return format_html('<code style="white-space: nowrap">{}</code>', obj.uuid)

    @admin.display(description="episodes", ordering="episode_count")
    def episode_count(self, obj: ChatSession) -> int:
        return obj.episode_count

    @admin.display(description="tokens", ordering="total_tokens")
    def total_tokens(self, obj: ChatSession) -> int:
        return obj.total_tokens

    @admin.display(description="last episode", ordering="last_episode_id")
    def last_episode_id(self, obj: ChatSession) -> int | None:
        return obj.last_episode_id

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

    @admin.display(description="episode list")
    def episodes_link(self, obj: ChatSession) -> str:
        return format_html('<a href="{}">View episodes</a>', episodes_url(obj))

    @admin.display(description="summary rows")
    def summaries_link(self, obj: ChatSession) -> str:
        url = reverse("admin:summaries_summary_changelist") + "?" + urlencode({"session": str(obj.uuid)})
        return format_html(
            '<a href="{}">All summary rows</a> (the newest {} are listed below)', url, SUMMARY_ROWS_INLINE
        )

    @admin.action(description="Rebuild the summary chains of selected sessions", permissions=["change"])
    def rebuild_chains(self, request: HttpRequest, queryset: QuerySet) -> None:
        queue_chain_rebuilds(self, request, list(queryset.order_by("pk")))


class EpisodeChangeList(ChangeList):
    """The episode list reads previews, never the full texts: each text is
    cut to its first characters by the database (``LEFT``/``SUBSTR``)."""

    def get_queryset(self, request: HttpRequest, exclude_parameters=None) -> QuerySet:
        return with_previews(
            super().get_queryset(request, exclude_parameters).defer("user_input", "response", "metadata")
        )


@admin.register(Episode)
class EpisodeAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "session_link",
        "created_at",
        "token_count",
        "user_input_preview",
        "response_preview",
    )
    list_select_related = ("session",)
    list_filter = (SessionFilter,)
    search_fields = ("user_input", "response")
    search_help_text = "Search the text of questions and replies."
    ordering = ("-pk",)
    # Counting a whole large table on every page view is slow; the filtered
    # count is enough for paging.
    show_full_result_count = False
    fields = ("session_link", "created_at", "token_count", "user_input", "response", "metadata")
    readonly_fields = ("session_link",)

    def get_changelist(self, request: HttpRequest, **kwargs) -> type[ChangeList]:
        return EpisodeChangeList

    @admin.display(description="session", ordering="session")
    def session_link(self, obj: Episode) -> str:
        url = reverse("admin:sessions_app_chatsession_change", args=[obj.session_id])
        return format_html('<a href="{}">{}</a>', url, obj.session)

    @admin.display(description="user input")
    def user_input_preview(self, obj: Episode) -> str:
        return preview(obj.user_input_head)

    @admin.display(description="response")
    def response_preview(self, obj: Episode) -> str:
        return preview(obj.response_head)
