"""Creating, finding, using and revoking API keys.

A key is its user's: every read and write it makes is the user's own, with
no staff permission (``sessions_app.access``) and, when the key names an end
user, only that end user's sessions. Revoking deletes the row; its signal
tells every process (``nexus.api.keys.revocation``).
"""

from __future__ import annotations

import copy
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions

from nexus.api.keys import PREFIX, USER_ATTRIBUTE
from nexus.api.keys.models import END_USER_MAX_LENGTH, SHOWN_CHARACTERS, ApiKey, key_digest

#: ``last_used_at`` is written at most this often per key.
LAST_USED_EVERY = timedelta(minutes=1)
NAME_MAX_LENGTH = ApiKey._meta.get_field("name").max_length


def key_problems(*, name: str, end_user: str = "", expires_at: datetime | None = None) -> dict[str, str]:
    """What is wrong with these values, by field (empty: nothing)."""
    problems = {}
    if not name.strip():
        problems["name"] = "A key needs a name (which integration uses it)."
    elif len(name) > NAME_MAX_LENGTH:
        problems["name"] = f"At most {NAME_MAX_LENGTH} characters."
    if len(end_user) > END_USER_MAX_LENGTH:
        problems["end_user"] = f"At most {END_USER_MAX_LENGTH} characters."
    for field, value in (("name", name), ("end_user", end_user)):
        if not _storable(value):  # the database would refuse it as a server error
            problems[field] = "Text with a NUL character or a lone surrogate cannot be stored."
    if expires_at is not None and expires_at <= timezone.now():
        problems["expires_at"] = "The expiry must be in the future."
    return problems


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def key_create(
    *, user: Any, name: str, end_user: str = "", expires_at: datetime | None = None
) -> tuple[ApiKey, str]:
    """A new key of ``user`` and its secret, which is shown this once and never
    stored; ``ValidationError`` naming the fields of bad values."""
    if problems := key_problems(name=name, end_user=end_user, expires_at=expires_at):
        raise ValidationError({field: [message] for field, message in problems.items()})
    key = ApiKey(user_id=user.pk, name=name.strip(), end_user=end_user, expires_at=expires_at)
    secret = give_secret(key)
    key.save()
    return key, secret


def give_secret(key: ApiKey) -> str:
    """A new secret for an unsaved ``key``: its digest and shown start are set, the secret returned."""
    secret = PREFIX + secrets.token_urlsafe(32)
    key.shown = secret[:SHOWN_CHARACTERS]
    key.digest = key_digest(secret)
    return secret


def key_revoke(*, key: ApiKey) -> None:
    """Delete ``key``: every process refuses it once this has committed (``revocation``)."""
    key.delete()


def keys_of(user: Any):
    return ApiKey.objects.filter(user_id=user.pk).order_by("-created_at", "-pk")


def is_key(secret: str) -> bool:
    return secret.startswith(PREFIX)


def key_authenticate(secret: str) -> tuple[Any, ApiKey]:
    """The user ``secret`` acts as (carrying its key) and the key, in one query;
    ``AuthenticationFailed`` for an unknown or expired key or an inactive user."""
    try:
        key = ApiKey.objects.select_related("user").get(digest=key_digest(secret))
    except ApiKey.DoesNotExist:
        raise exceptions.AuthenticationFailed("Invalid API key.") from None
    if not key.user.is_active:
        raise exceptions.AuthenticationFailed("User inactive or deleted.")
    check_unexpired(key)
    # A copy: the user row may be remembered for the account token too, which must not carry the key.
    user = copy.copy(key.user)
    setattr(user, USER_ATTRIBUTE, key)
    return user, key


def check_unexpired(key: ApiKey) -> None:
    if key.expired():
        raise exceptions.AuthenticationFailed("This API key has expired.")


def key_used(key: ApiKey, now: datetime | None = None) -> None:
    """Record a use: at most one write a minute per key, whatever the number of
    processes (the UPDATE only takes a row whose last use is older)."""
    now = now or timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_EVERY:
        return
    ApiKey.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_EVERY), pk=key.pk
    ).update(last_used_at=now)
    # The remembered key is shared by this process's requests: a plain assignment, read as a whole.
    key.last_used_at = now
