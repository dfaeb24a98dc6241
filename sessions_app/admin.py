"""Staff admin for chat sessions and episodes.

``summaries.admin.sessions`` extends the session admin with what needs
summaries (the summarization state, the summary chain, the rebuild action).

Every list page is one query for its rows, however many there are: the
session stats come from ``with_stats()`` (correlated subqueries in the same
SELECT), related rows through ``list_select_related``, and episode texts
stay in the database on the list page (previews are cut in SQL).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from sessions_app.admin_filters import ActivityFilter, OwnerFilter, SessionFilter
from sessions_app.models import ChatSession, Episode
from sessions_app.search.admin_lookup import EmptyQuery, matching_episode_ids

PREVIEW_CHARS = 80
#: The episode search shows at most this many matches, the newest.
EPISODE_SEARCH_LIMIT = 1000


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


class ReadOnlyAdminMixin:
    """View only: rows here are written by services, never by hand."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "uuid_display",
        "owner",
        "episode_count",
        "total_tokens",
        "last_episode_id",
        "updated_at",
        "episodes_link",
        # Whose memory: after the columns whose places sorting links name.
        "end_user",
        "memory_scope",
    )
    list_select_related = ("owner",)
    search_fields = ("uuid", "title", "owner__username", "end_user")
    search_help_text = "Search by uuid, title, owner username or end user."
    list_filter = (ActivityFilter, OwnerFilter, "memory_scope")
    ordering = ("-updated_at", "-pk")
    fields = (
        "uuid",
        "owner",
        "title",
        "metadata",
        ("end_user", "memory_scope"),
        ("episode_count", "total_tokens", "last_episode_id"),
        "episodes_link",
        ("created_at", "updated_at"),
    )
    readonly_fields = (
        "uuid",
        "owner",
        # Changed through the API and the chat pages, whose checks (an end user
        # only while the session is empty) the admin form would not apply.
        "end_user",
        "memory_scope",
        "episode_count",
        "total_tokens",
        "last_episode_id",
        "episodes_link",
        "created_at",
        "updated_at",
    )

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

    @admin.display(description="episode list")
    def episodes_link(self, obj: ChatSession) -> str:
        return format_html('<a href="{}">View episodes</a>', episodes_url(obj))

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
        "exchange",
        "session_link",
        "created_at",
        "token_count",
        "user_input_preview",
        "response_preview",
    )
    list_select_related = ("session",)
    list_filter = (SessionFilter,)
    # Only shows the search box: get_search_results searches through the index.
    search_fields = ("user_input", "response")
    search_help_text = (
        "Search the text of questions and replies: every word must appear, in any form "
        f"(“grow” finds “growing”); the newest {EPISODE_SEARCH_LIMIT:,} matches are shown."
    )
    ordering = ("-pk",)
    # Counting a whole large table on every page view is slow; the filtered
    # count is enough for paging.
    show_full_result_count = False
    fields = ("exchange", "session_link", "created_at", "token_count", "user_input", "response", "metadata")
    readonly_fields = ("exchange", "session_link")

    def get_changelist(self, request: HttpRequest, **kwargs) -> type[ChangeList]:
        return EpisodeChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """Search through the full-text index rather than ``icontains``
        scans of every text: the newest ``EPISODE_SEARCH_LIMIT`` episodes
        holding every word of the query, narrowed further by the filters.

        A query with nothing to search for (only stop words or punctuation)
        shows no rows and says why, the way a query matching nothing would
        show none; it is not an error.
        """
        if not search_term.strip():
            return queryset, False
        try:
            ids = matching_episode_ids(search_term, limit=EPISODE_SEARCH_LIMIT + 1)
        except EmptyQuery:
            self.message_user(
                request,
                "Nothing to search for: the query holds only common words or punctuation.",
                messages.INFO,
                fail_silently=True,
            )
            return queryset.none(), False
        if len(ids) > EPISODE_SEARCH_LIMIT:
            self.message_user(
                request,
                f"More than {EPISODE_SEARCH_LIMIT:,} episodes match; only the newest {EPISODE_SEARCH_LIMIT:,} "
                "are considered. Add words to narrow the search.",
                messages.INFO,
                fail_silently=True,
            )
            ids = ids[:EPISODE_SEARCH_LIMIT]
        return queryset.filter(pk__in=ids), False

    @admin.display(description="exchange", ordering="pk")
    def exchange(self, obj: Episode) -> str:
        return f"#{obj.position}"

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
