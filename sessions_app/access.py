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

A request made with an API key (``nexus.api.keys``) holds no staff
permission whatever its user holds (staff use the admin), and a key bound to
an end user reads and changes only that end user's sessions
(``session_confinement``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from nexus.api.keys import bound_end_user, key_of
from sessions_app.errors import EndUserNotAllowed

VIEW_SESSIONS = "sessions_app.view_chatsession"
CHANGE_SESSIONS = "sessions_app.change_chatsession"


def acts_as_staff(user: Any) -> bool:
    """Whether ``user`` is staff (or a superuser) acting as such: not through an API key."""
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser) and key_of(user) is None)


def has_staff_permission(user: Any, *perms: str) -> bool:
    """Whether ``user`` is staff (or a superuser), not through an API key, holding any of ``perms``."""
    if not acts_as_staff(user):
        return False
    return any(user.has_perm(perm) for perm in perms)


def reads_all_sessions(user: Any) -> bool:
    return has_staff_permission(user, VIEW_SESSIONS, CHANGE_SESSIONS)


def changes_all_sessions(user: Any) -> bool:
    return has_staff_permission(user, CHANGE_SESSIONS)


def session_confinement(user: Any, prefix: str = "") -> Q:
    """What a session must match beyond its owner for ``user``: for a key
    bound to an end user, that end user's sessions (``prefix``: the path
    to the session from the model filtered, e.g. ``"session__"``)."""
    end_user = bound_end_user(user)
    if end_user is None:
        return Q()
    return Q(**{f"{prefix}end_user": end_user})


def end_user_written(user: Any, end_user: str | None, *, creating: bool) -> str | None:
    """The ``end_user`` a session written by ``user`` gets. A key bound to an
    end user writes only that end user's sessions: a new session is theirs
    whatever it names (an empty ``end_user`` is the default of every create
    path), a change may only name them; any other is ``EndUserNotAllowed``.
    ``None`` (a change that leaves it) stays ``None``."""
    bound = bound_end_user(user)
    if bound is None or end_user is None or end_user == bound:
        return end_user
    if creating and end_user == "":
        return bound
    raise EndUserNotAllowed(bound)
