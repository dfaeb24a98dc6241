"""Pagination whose sizes come from settings at request time."""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination, PageNumberPagination
from rest_framework.request import Request

# Largest value a PostgreSQL bigint (and a SQLite integer) can hold.
MAX_ID = 2**63 - 1


class _SettingsPageSize:
    page_size_query_param = "page_size"

    def __init__(self) -> None:
        # Paginators are made per request, so sizes follow settings (and tests).
        self.page_size = settings.API_PAGE_SIZE
        self.max_page_size = settings.API_MAX_PAGE_SIZE


class IdCursorPagination(_SettingsPageSize, CursorPagination):
    """Cursor pagination over an integer column, ascending.

    DRF passes the cursor's position straight into the filter; a forged
    cursor with a non-integer position would reach the database, so it is
    checked here and answered as an invalid cursor (404), like any other.
    """

    ordering = "pk"

    def decode_cursor(self, request: Request) -> Cursor | None:
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        position = cursor.position
        if not position.isascii() or not position.isdigit() or int(position) > MAX_ID:
            raise NotFound(self.invalid_cursor_message)
        return cursor


class SessionPagination(_SettingsPageSize, PageNumberPagination):
    pass
