"""Who may read or change another user's data: one rule for the API, the
web pages, the admin's usage page and the write path.

Everybody reads and changes their own sessions. Another user's data takes
a staff account holding the model permission (``view_*`` to read,
``change_*`` to change; ``change`` implies ``view``, as in the admin);
superusers hold every permission. Staff status alone grants nothing here,
as the admin grants nothing without a permission. A permission given to a
non-staff account grants nothing either: reading every user's memory is a
staff capability, and checking it only for staff keeps the ordinary
caller's hot path free of permission queries.
"""

from __future__ import annotations

from typing import Any

VIEW_SESSIONS = "sessions_app.view_chatsession"
CHANGE_SESSIONS = "sessions_app.change_chatsession"


def has_staff_permission(user: Any, *perms: str) -> bool:
    """Whether ``user`` is staff (or a superuser) holding any of ``perms``."""
    if not user.is_authenticated or not (user.is_staff or user.is_superuser):
        return False
    return any(user.has_perm(perm) for perm in perms)


def reads_all_sessions(user: Any) -> bool:
    return has_staff_permission(user, VIEW_SESSIONS, CHANGE_SESSIONS)


def changes_all_sessions(user: Any) -> bool:
    return has_staff_permission(user, CHANGE_SESSIONS)
