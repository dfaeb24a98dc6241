"""Read-only admin for what summarization leaves behind: revisions of a
row (every edit, regeneration and restore) and each session's state."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from sessions_app.admin import ReadOnlyAdminMixin, preview
from summaries.models import SummarizationState, SummaryRevision


@admin.register(SummaryRevision)
class SummaryRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "summary_link",
        "source",
        "actor",
        "episode_range",
        "token_count",
        "curated",
    )
    list_select_related = ("summary__session", "actor")
    list_filter = ("source",)
    search_fields = ("content",)
    ordering = ("-created_at", "-pk")
    fields = (
        "summary_link",
        "source",
        "actor",
        "created_at",
        "episode_range",
        "token_count",
        "curated",
        "content",
    )
    readonly_fields = ("summary_link", "episode_range")

    @admin.display(description="summary row", ordering="summary")
    def summary_link(self, obj: SummaryRevision) -> str:
        url = reverse("admin:summaries_summary_change", args=[obj.summary_id])
        return format_html('<a href="{}">{}</a>', url, obj.summary)

    @admin.display(description="range before")
    def episode_range(self, obj: SummaryRevision) -> str:
        return obj.exchanges



@admin.register(SummarizationState)
class SummarizationStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("session", "state", "updated_at", "failed_at", "error_preview", "rerun_requested")
    list_select_related = ("session",)
    list_filter = ("state",)
    search_fields = ("session__uuid", "session__title")
    ordering = ("-updated_at",)

    @admin.display(description="last error")
    def error_preview(self, obj: SummarizationState) -> str:
        return preview(obj.last_error, 100)
