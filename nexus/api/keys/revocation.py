"""A deleted or changed key is refused at once by every process: the same
per-user generation as the account token's (``nexus.api.authentication``)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from nexus.api.authentication import revoke_remembered
from nexus.api.keys.models import ApiKey


def _key_changed(sender: type[ApiKey], instance: ApiKey, created: bool = False, **kwargs: Any) -> None:
    if created:
        return  # a new key: no process can remember it yet
    revoke_remembered(instance.user_id)


def connect_signals() -> None:
    post_delete.connect(_key_changed, sender=ApiKey, dispatch_uid="nexus.api.keys.key_deleted")
    post_save.connect(_key_changed, sender=ApiKey, dispatch_uid="nexus.api.keys.key_saved")
