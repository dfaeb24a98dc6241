"""Token authentication with a short per-process memory and a shared
revocation check.

Every API request would pay one query to turn its token into a user. A
process keeps the answer for ``API_TOKEN_CACHE_SECONDS`` (0 turns this off),
so a client writing many episodes pays that query once per interval.

What the memory must not do is outlive a revocation. Each user has a token
generation in the shared cache (``nexus.store_settings``), changed whenever
one of their tokens is deleted or the user row changes (deactivation, a new
password, a demotion), once that change is committed. A remembered answer is
used only while the generation it was read with is still the current one,
and a deleted token fails at once in every process sharing the cache: the
change returns only when every process holds the new generation
(``nexus.marks``), so checking it costs no round trip to the cache.

Where the shared store is the database (no Redis) there is one generation
for all tokens, which each process reads at most once a second, and a
revocation answers only once every process will have read it again
(``nexus.api.polled_generation``): a deleted token fails in every process
once its revocation has answered, and the memory costs one query a second.

While the shared store cannot be reached (``nexus.store_guard``), every
request looks its token up in the database and nothing is remembered; a
revocation is then the deleted row alone, which every process sees at once.
A remembered answer read before an outage this process noticed is not used
after it either: a change published meanwhile may never have reached it.

A request whose token is refused counts against the anonymous throttle
before its 401, so guessing tokens is limited like any anonymous traffic.

The token is sent as ``Authorization: Token <key>`` or, as OpenAI clients
and most HTTP libraries send a key, ``Authorization: Bearer <key>``. An API
key (``nexus.api.keys``) is taken the same ways and remembered and revoked
on the same path: its row's signals change its user's generation.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import get_hasher, identify_hasher
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.authtoken.models import Token

from nexus.api import polled_generation
from nexus.api.keys.models import ApiKey
from nexus.api.keys.services import check_unexpired, is_key, key_authenticate, key_used
from nexus.api.throttling import anonymous_wait
from nexus.counters import store_client, store_is_database
from nexus.marks import current_mark, set_mark
from nexus.store_guard import StoreUnavailable, outages_seen

MAX_ENTRIES = 10_000
_UNREAD = object()

_lock = threading.Lock()
# key -> (expires, user, token or API key, generation, outages seen when read)
_entries: OrderedDict[str, tuple[float, Any, Any, Any, int]] = OrderedDict()


def generation_key(user_pk: Any) -> str:
    return f"token-generation:{user_pk}"


def revoke_remembered(user_pk: Any) -> None:
    """Every process stops trusting what it remembers of this user's tokens:
    this one now, the others once the change is committed (until then the
    database still holds the old rows, and a process that looked them up in
    between would remember them under the new generation). The mark
    outlives any remembered answer read before it."""
    forget_tokens(user_pk=user_pk)
    transaction.on_commit(lambda: _new_generation(user_pk))


def _new_generation(user_pk: Any) -> None:
    if store_is_database():
        polled_generation.revoke_everywhere()
        forget_tokens(user_pk=user_pk)
        return
    timeout = max(settings.API_TOKEN_CACHE_SECONDS * 2, 60)
    try:
        set_mark(generation_key(user_pk), uuid.uuid4().hex, timeout)
    except StoreUnavailable:
        pass  # the row is gone: every process checks tokens against the database meanwhile
    forget_tokens(user_pk=user_pk)


def _generation(user_pk: Any) -> Any:
    """The user's current token generation; ``_UNREAD`` while the store cannot be reached."""
    try:
        return current_mark(generation_key(user_pk))
    except StoreUnavailable:
        return _UNREAD


def forget_tokens(*, user_pk: int | None = None, key: str | None = None) -> None:
    """Drop this process's remembered tokens of a user, one key, or (neither given) all of them."""
    with _lock:
        if user_pk is None and key is None:
            _entries.clear()
            return
        for cached_key in list(_entries):
            user = _entries[cached_key][1]
            if cached_key == key or user.pk == user_pk:
                del _entries[cached_key]


class CachedTokenAuthentication(TokenAuthentication):
    #: The schemes a key may be sent under; ``keyword`` names the first in a 401's ``WWW-Authenticate``.
    keywords: tuple[str, ...] = ("Token", "Bearer")

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        try:
            key = self.sent_key(request)
            return None if key is None else self.authenticate_credentials(key)
        except exceptions.AuthenticationFailed:
            wait = anonymous_wait(request)
            if wait is not None:
                raise exceptions.Throttled(wait) from None
            raise

    def sent_key(self, request: Any) -> str | None:
        """The key of the ``Authorization`` header under one of ``keywords``;
        ``None`` for another scheme (another authentication may take it)."""
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in {word.lower().encode() for word in self.keywords}:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                f"Invalid {parts[0].decode(errors='replace')} header: send one key, without spaces."
            )
        try:
            return parts[1].decode()
        except UnicodeError:
            message = "Invalid token header: the key has invalid characters."
            raise exceptions.AuthenticationFailed(message) from None

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        user, auth = self._remembered_or_looked_up(key)
        if isinstance(auth, ApiKey):
            check_unexpired(auth)  # a remembered key too: its expiry is no revocation
            key_used(auth)
        return user, auth

    def look_up(self, key: str) -> tuple[Any, Any]:
        """The user and the account token or API key ``key`` stands for, from the database."""
        if is_key(key):
            return key_authenticate(key)
        return super().authenticate_credentials(key)

    def _remembered_or_looked_up(self, key: str) -> tuple[Any, Any]:
        ttl = settings.API_TOKEN_CACHE_SECONDS
        if ttl <= 0:
            return self.look_up(key)
        if store_is_database():
            return self._checked_by_poll(key, ttl)
        now = time.monotonic()
        # Read first: an outage from here on makes the entry stale (local memory has none).
        outages = outages_seen() if store_client() is not None else 0
        with _lock:
            hit = _entries.get(key)
        generation: Any = _UNREAD
        if hit is not None and hit[0] > now and hit[4] == outages:
            # Read before the database lookup below, so a revocation in between is not missed.
            generation = _generation(hit[1].pk)
            if generation is not _UNREAD and generation == hit[3]:
                return hit[1], hit[2]
        user, token = self.look_up(key)
        if generation is _UNREAD or hit[1].pk != user.pk:
            # First sight of this token: read just after the lookup (a revocation
            # landing in the instant between is seen when the entry expires).
            generation = _generation(user.pk)
        if generation is _UNREAD:
            return user, token  # checked against the database; nothing to remember it by
        _remember(key, (now + ttl, user, token, generation, outages))
        return user, token

    def _checked_by_poll(self, key: str, ttl: int) -> tuple[Any, Any]:
        now = time.monotonic()
        generation = polled_generation.current(now)  # read before the lookup, as above
        with _lock:
            hit = _entries.get(key)
        if hit is not None and hit[0] > now and hit[3] == generation:
            return hit[1], hit[2]
        user, token = self.look_up(key)
        _remember(key, (now + ttl, user, token, generation, outages_seen()))
        return user, token


class BearerScheme(OpenApiAuthenticationExtension):
    """How the schema names it: a bearer key (``Token`` is still taken)."""

    target_class = CachedTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (/api/keys/) or the account token (/api/auth/token/); "
            "`Authorization: Token <token>` is taken too.",
        }


def _remember(key: str, entry: tuple[float, Any, Any, Any, int]) -> None:
    with _lock:
        _entries[key] = entry
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def _token_changed(sender: type[Token], instance: Token, created: bool = False, **kwargs: Any) -> None:
    if created:
        return  # a new key: no process can remember it yet
    revoke_remembered(instance.user_id)


def _user_changed(
    sender: Any, instance: Any, update_fields: Any = None, created: bool = False, **kwargs: Any
) -> None:
    if created:
        return  # a new user has no token yet
    if update_fields is not None and set(update_fields) <= {"last_login"}:
        return  # a login changes nothing a token stands for
    revoke_remembered(instance.pk)


def _password_changing(sender: Any, instance: Any, raw: bool = False, update_fields: Any = None, **kwargs: Any) -> None:
    """A new password revokes the user's tokens, however it is saved (the
    admin's and the web's password forms, ``changepassword``, ``set_password``
    then ``save``): the stored hash is compared with the one being saved.
    Django's own rehash at login (a stronger hasher, same password) is not a change."""
    if raw or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = sender._default_manager.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is None or stored == instance.password:
        return
    if update_fields is not None and set(update_fields) == {"password"} and _outdated(stored):
        return
    Token.objects.filter(user_id=instance.pk).delete()


def _outdated(encoded: str) -> bool:
    """Whether Django would rehash this stored password at the next login."""
    try:
        hasher = identify_hasher(encoded)
    except ValueError:  # an unusable password
        return False
    return hasher.algorithm != get_hasher().algorithm or hasher.must_update(encoded)


def connect_signals() -> None:
    pre_save.connect(_password_changing, sender=get_user_model(), dispatch_uid="nexus.api.password_changing")
    post_delete.connect(_token_changed, sender=Token, dispatch_uid="nexus.api.token_deleted")
    post_save.connect(_token_changed, sender=Token, dispatch_uid="nexus.api.token_saved")
    post_save.connect(_user_changed, sender=get_user_model(), dispatch_uid="nexus.api.user_saved")
    post_delete.connect(_user_changed, sender=get_user_model(), dispatch_uid="nexus.api.user_deleted")
