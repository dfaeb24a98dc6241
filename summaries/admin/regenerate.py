"""The admin's "Regenerate selected rows": curated rows only after a confirmation.

A curated row's text is a person's, and regenerating it replaces that text.
So when the selection holds curated rows, nothing is queued at first: a
confirmation page (like Django's delete confirmation) lists them, and only
its Confirm queues the whole selection, the curated rows with
``replace_curated`` (their texts kept as revisions). Cancel queues nothing,
not even the un-curated rows of the selection: a staff member who backs out
expects nothing to have happened. The page names each curated row it
listed, so a row curated after it was shown is asked about again.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import ngettext

from summaries import triggers
from summaries.admin.sessions import queue_all
from summaries.curation import REPLACE_CURATED
from summaries.models import Summary

ACTION = "regenerate_selected"
CONFIRMATION_TEMPLATE = "admin/summaries/summary/regenerate_confirmation.html"


def regenerate_rows(
    model_admin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Summary]
) -> TemplateResponse | None:
    """Queue a regeneration of every selected row, or answer the
    confirmation page while a curated one among them is not confirmed."""
    rows = list(queryset.select_related("session", "curated_by").order_by("pk"))
    confirmed = set(request.POST.getlist(REPLACE_CURATED))
    curated = [row for row in rows if row.curated]
    if any(str(row.pk) not in confirmed for row in curated):
        return _confirmation(model_admin, request, rows, curated)
    if not queue_all(
        model_admin,
        request,
        rows,
        lambda row: triggers.summary_regenerate(
            summary=row, actor=request.user, replace_curated=row.curated
        ),
    ):
        return None
    model_admin.message_user(
        request,
        ngettext(
            "Queued %d summary row for regeneration.",
            "Queued %d summary rows for regeneration.",
            len(rows),
        )
        % len(rows),
        messages.SUCCESS,
    )
    if curated:
        model_admin.message_user(
            request,
            ngettext(
                "%d curated text is replaced; it is kept as a revision of its row.",
                "%d curated texts are replaced; each is kept as a revision of its row.",
                len(curated),
            )
            % len(curated),
            messages.WARNING,
        )
    return None


def _confirmation(
    model_admin: admin.ModelAdmin, request: HttpRequest, rows: list[Summary], curated: list[Summary]
) -> TemplateResponse:
    opts = model_admin.opts
    context = {
        **model_admin.admin_site.each_context(request),
        "title": ngettext(
            "Replace a curated summary?", "Replace %(count)d curated summaries?", len(curated)
        )
        % {"count": len(curated)},
        "subtitle": None,
        "opts": opts,
        "rows": rows,
        "curated": curated,
        "others": len(rows) - len(curated),
        "action": ACTION,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "replace_field": REPLACE_CURATED,
        # Cancel goes back to the list as it was (its filters are in this URL).
        "cancel_url": request.get_full_path(),
        "media": model_admin.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, CONFIRMATION_TEMPLATE, context)
