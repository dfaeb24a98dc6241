"""The key row: who it acts for, its name, its digest and its times."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

#: The most characters of an end user id (``ChatSession.end_user`` takes as many).
END_USER_MAX_LENGTH = 200
#: How much of a key is kept in clear, so a person tells their keys apart in a list.
SHOWN_CHARACTERS = 12


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKey(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    #: The key's first characters (``nxk_`` and a few of its secret), shown in lists.
    shown = models.CharField(max_length=SHOWN_CHARACTERS)
    digest = models.CharField(max_length=64, unique=True)
    #: Empty: the key reads and writes every session of its user; else only that end user's.
    end_user = models.CharField(max_length=END_USER_MAX_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    #: Written at most once a minute (``nexus.api.keys.services.key_used``).
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "API key"
        indexes = [models.Index(fields=["user", "-created_at"], name="api_key_user_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.shown}…)"

    def expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())
