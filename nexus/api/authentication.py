"""Token authentication with a short per-process memory.

Every API request pays one query to turn its token into a user. A process
keeps the answer for ``API_TOKEN_CACHE_SECONDS`` (0 turns this off), so a
client writing many episodes pays that query once per interval.

The price: a token deleted, or a user deactivated or demoted, in another
process stays usable in this one for at most that interval. Changes made in
this process (signals below) take effect at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

MAX_ENTRIES = 10_000

_lock = threading.Lock()
_entries: OrderedDict[str, tuple[float, Any, Token]] = OrderedDict()


def forget_tokens(*, user_pk: int | None = None, key: str | None = None) -> None:
    """Drop remembered tokens of a user, one key, or (neither given) all of them."""
    with _lock:
        if user_pk is None and key is None:
            _entries.clear()
            return
        for cached_key in list(_entries):
            _, user, _token = _entries[cached_key]
            if cached_key == key or user.pk == user_pk:
                del _entries[cached_key]


class CachedTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        ttl = settings.API_TOKEN_CACHE_SECONDS
        if ttl <= 0:
            return super().authenticate_credentials(key)
        now = time.monotonic()
        with _lock:
            hit = _entries.get(key)
            if hit is not None and hit[0] > now:
                _entries.move_to_end(key)
                return hit[1], hit[2]
        user, token = super().authenticate_credentials(key)
        with _lock:
            _entries[key] = (now + ttl, user, token)
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
        return user, token


def _token_changed(sender: type[Token], instance: Token, **kwargs: Any) -> None:
    forget_tokens(key=instance.key)


def _user_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    forget_tokens(user_pk=instance.pk)


def connect_signals() -> None:
    post_delete.connect(_token_changed, sender=Token, dispatch_uid="nexus.api.token_deleted")
    post_save.connect(_token_changed, sender=Token, dispatch_uid="nexus.api.token_saved")
    post_save.connect(_user_changed, sender=get_user_model(), dispatch_uid="nexus.api.user_saved")
    post_delete.connect(_user_changed, sender=get_user_model(), dispatch_uid="nexus.api.user_deleted")
