"""List filters for the staff admin.

Owners and sessions are filtered through a text box rather than Django's
list of links: the sidebar stays one line however many users or sessions
there are, and nothing is queried to draw it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.utils import timezone


class InputFilter(admin.SimpleListFilter):
    """A filter drawn as a text box (``templates/admin/input_filter.html``)."""

    template = "admin/input_filter.html"
    placeholder = ""

    def lookups(self, request, model_admin) -> list[tuple[str, str]]:
        # One placeholder choice so the admin shows the filter at all; the
        # template draws a text box instead of choices.
        return [("", "")]

    def choices(self, changelist) -> Any:
        current = (self.value() or "").strip()
        yield {
            "selected": bool(current),
            "value": current,
            "parameter_name": self.parameter_name,
            "placeholder": self.placeholder,
            # The other filters, the search and the ordering survive a submit.
            "hidden": [
                (key, value)
                for key, values in changelist.filter_params.items()
                if key != self.parameter_name
                for value in values
            ],
            "clear_query_string": changelist.get_query_string(remove=[self.parameter_name]),
        }

    def cleaned_value(self) -> str:
        return (self.value() or "").strip()


class OwnerFilter(InputFilter):
    title = "owner"
    parameter_name = "owner"
    placeholder = "username"

    def queryset(self, request, queryset: QuerySet) -> QuerySet | None:
        username = self.cleaned_value()
        if not username:
            return None
        return queryset.filter(owner__username__iexact=username)


class SessionFilter(InputFilter):
    """Rows of one session, named by its uuid (the id staff see everywhere)."""

    title = "session"
    parameter_name = "session"
    placeholder = "session uuid"
    session_lookup = "session__uuid"

    def queryset(self, request, queryset: QuerySet) -> QuerySet | None:
        raw = self.cleaned_value()
        if not raw:
            return None
        try:
            value = uuid.UUID(raw)
        except ValueError:
            return queryset.none()
        return queryset.filter(**{self.session_lookup: value})


class ActivityFilter(admin.SimpleListFilter):
    """Sessions by their last activity (``updated_at`` moves with every episode)."""

    title = "activity"
    parameter_name = "activity"

    TODAY = "today"
    WEEK = "week"
    OLDER = "older"

    def lookups(self, request, model_admin) -> list[tuple[str, str]]:
        return [
            (self.TODAY, "Active today"),
            (self.WEEK, "Active in the last 7 days"),
            (self.OLDER, "Older"),
        ]

    def queryset(self, request, queryset: QuerySet) -> QuerySet | None:
        now = timezone.now()
        start_of_today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
        week_ago = now - timedelta(days=7)
        match self.value():
            case self.TODAY:
                return queryset.filter(updated_at__gte=start_of_today)
            case self.WEEK:
                return queryset.filter(updated_at__gte=week_ago)
            case self.OLDER:
                return queryset.filter(updated_at__lt=week_ago)
        return None
