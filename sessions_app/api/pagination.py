"""Cursor pagination of a session's episodes in the ``(session, id)`` index's order."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.request import Request

from nexus.api.pagination import IdCursorPagination


class _InIndexOrder:
    """The queryset DRF paginates, with ``order_by`` asked for by id answered
    in the index's order (see ``EpisodeQuerySet.in_index_order``): the cursor
    keeps positioning on ids while every page is a range of that index."""

    def __init__(self, queryset: QuerySet) -> None:
        self.queryset = queryset

    def order_by(self, *fields: str) -> QuerySet:
        assert fields in (("pk",), ("-pk",)), fields
        return self.queryset.in_index_order(newest_first=fields[0].startswith("-"))


class EpisodeCursorPagination(IdCursorPagination):
    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list[Any] | None:
        return super().paginate_queryset(_InIndexOrder(queryset), request, view)
