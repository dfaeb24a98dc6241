"""Staff admin for summary rows: curate, regenerate, rebuild and restore.

The admin holds no summarization logic. An edit goes through
``summary_curate`` (the row becomes curated and its previous state is kept
as a revision), a restore through ``summary_restore``, and the actions call
the same queueing services as the API (a regeneration of curated rows after
a confirmation page, ``summaries.admin.regenerate``).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from sessions_app.admin import episodes_url, preview, with_previews
from sessions_app.admin_filters import SessionFilter
from sessions_app.models import ChatSession, Episode
from summaries.admin.forms import SummaryForm
from summaries.admin.regenerate import regenerate_rows
from summaries.admin.sessions import queue_chain_rebuilds
from summaries.curation import summary_curate, summary_restore
from summaries.models import Summary, SummaryRevision

# The row's page lists at most this many covered episodes and revisions;
# the rest are one link away in their own lists.
COVERED_EPISODES_SHOWN = 50
REVISIONS_SHOWN = 50


@admin.register(Summary)
class SummaryAdmin(admin.ModelAdmin):
    form = SummaryForm
    list_display = ("range_link", "session", "token_count", "curated", "model", "updated_at")
    list_display_links = ("range_link",)
    list_select_related = ("session",)
    list_filter = ("curated", "replaced_curation", "model", SessionFilter)
    search_fields = ("content", "session__title", "session__uuid")
    search_help_text = "Search summary text, session title or session uuid."
    ordering = ("-updated_at", "-pk")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "session_link",
                    "episode_range",
                    "content",
                    "token_count",
                    ("curated", "curated_by", "replaced_curation"),
                    "review_note",
                )
            },
        ),
        (
            "Model call",
            {"fields": ("model", ("prompt_tokens", "completion_tokens"), "duration", "truncated_chars")},
        ),
        ("Coverage", {"fields": ("covered_episodes",)}),
        ("Timestamps", {"fields": (("created_at", "updated_at"),)}),
    )
    readonly_fields = (
        "session_link",
        "episode_range",
        "token_count",
        "curated",
        "curated_by",
        "replaced_curation",
        "review_note",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "duration",
        "truncated_chars",
        "covered_episodes",
        "created_at",
        "updated_at",
    )
    actions = ("regenerate_selected", "rebuild_session_chains")

    def get_fieldsets(self, request: HttpRequest, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or not self.has_change_permission(request, obj):
            return fieldsets
        (name, options), *rest = fieldsets
        return ((name, {**options, "fields": (*options["fields"], "loaded_version")}), *rest)

    # --- permissions ----------------------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Rows come from summarization (or the API); adding one here could
        # break the chain's tiling of the session's episodes.
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # A deleted row would leave its episodes covered by nothing and its
        # history untraceable; curate or regenerate it instead.
        return False

    # --- list columns -----------------------------------------------------------

    @admin.display(description="exchanges", ordering="first_episode_id")
    def range_link(self, obj: Summary) -> str:
        return obj.exchanges

    # --- change page --------------------------------------------------------------

    @admin.display(description="session")
    def session_link(self, obj: Summary) -> str:
        url = reverse("admin:sessions_app_chatsession_change", args=[obj.session_id])
        return format_html('<a href="{}">{}</a> ({})', url, obj.session, obj.session.uuid)

    @admin.display(description="exchanges")
    def episode_range(self, obj: Summary) -> str:
        return f"{obj.exchanges} (episode ids {obj.episode_range})"

    @admin.display(description="duration")
    def duration(self, obj: Summary) -> str:
        return f"{obj.duration_ms} ms"

    @admin.display(description="episodes covered")
    def covered_episodes(self, obj: Summary) -> str:
        covered = Episode.objects.after(obj.session_id, obj.first_episode_id - 1, obj.last_episode_id)
        previews = with_previews(covered.only("pk", "session_id", "position", "created_at", "token_count"))
        shown = list(previews[:COVERED_EPISODES_SHOWN])
        if not shown:
            return "None of the episodes in this range exist any more."
        total = covered.count() if len(shown) == COVERED_EPISODES_SHOWN else len(shown)
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    reverse("admin:sessions_app_episode_change", args=[e.pk]),
                    f"#{e.position}",
                    e.token_count,
                    preview(e.user_input_head),
                    preview(e.response_head),
                )
                for e in shown
            ),
        )
        list_url = episodes_url(obj.session, id__gte=obj.first_episode_id, id__lte=obj.last_episode_id)
        more = (
            f"Showing the first {len(shown)} of {total} episodes."
            if total > len(shown)
            else ngettext("%d episode.", "%d episodes.", total) % total
        )
        return format_html(
            '<table class="covered-episodes"><thead><tr><th>exchange</th><th>tokens</th><th>user input</th>'
            "<th>response</th></tr></thead><tbody>{}</tbody></table>"
            '<p>{} <a href="{}">Open them in the episode list</a></p>',
            rows,
            more,
            list_url,
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("session", "curated_by")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            revisions = obj.revisions.select_related("actor")
            context.update(
                revisions=list(revisions[:REVISIONS_SHOWN]),
                revision_count=revisions.count(),
                revisions_url=reverse("admin:summaries_summaryrevision_changelist")
                + f"?summary__id__exact={obj.pk}",
                can_restore=self.has_change_permission(request, obj),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request: HttpRequest, obj: Summary, form, change: bool) -> None:
        # Only the content is editable; an unchanged text is not an edit.
        if change and "content" in form.changed_data:
            summary_curate(summary=obj, content=form.cleaned_data["content"], actor=request.user)
            obj.refresh_from_db()

    # --- restore ----------------------------------------------------------------

    def get_urls(self):
        return [
            path(
                "<path:object_id>/restore/<int:revision_id>/",
                self.admin_site.admin_view(self.restore_view),
                name=f"{self.opts.app_label}_{self.opts.model_name}_restore",
            ),
            *super().get_urls(),
        ]

    def restore_view(self, request: HttpRequest, object_id: str, revision_id: int) -> HttpResponse:
        """Put a revision's text and range back (``summary_restore``); the
        current state becomes a revision itself, so a restore can be undone."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        summary = self.get_object(request, unquote(object_id))
        if summary is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, summary):
            raise PermissionDenied
        revision = get_object_or_404(SummaryRevision, pk=revision_id, summary=summary)
        previous_last, previous_last_position = summary.last_episode_id, summary.last_position
        restored = summary_restore(revision=revision, actor=request.user)
        when = f"{revision.created_at:%Y-%m-%d %H:%M:%S}"
        self.log_change(request, restored, f"Restored the text of {when} ({revision.get_source_display()}).")
        self.message_user(
            request,
            f"Restored the text saved before the {revision.get_source_display().lower()} of "
            f"{when}; the replaced text is kept as a revision.",
            messages.SUCCESS,
        )
        later_rows = Summary.objects.filter(
            session_id=restored.session_id, first_episode_id__gt=previous_last
        )
        if restored.last_episode_id < previous_last and later_rows.exists():
            self.message_user(
                request,
                f"Exchanges after #{restored.last_position} up to #{previous_last_position} are no longer "
                "covered by this row and a later row follows it; rebuild the session's chain to cover them "
                "again.",
                messages.WARNING,
            )
        return HttpResponseRedirect(reverse("admin:summaries_summary_change", args=[restored.pk]))

    # --- actions ------------------------------------------------------------------

    @admin.action(description="Regenerate selected rows", permissions=["change"])
    def regenerate_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        # Curated rows first go through a confirmation page (summaries.admin.regenerate).
        return regenerate_rows(self, request, queryset)

    @admin.action(description="Rebuild the session's chain", permissions=["change"])
    def rebuild_session_chains(self, request: HttpRequest, queryset: QuerySet) -> None:
        sessions = list(ChatSession.objects.filter(pk__in=queryset.values("session_id")).order_by("pk"))
        queue_chain_rebuilds(self, request, sessions)
