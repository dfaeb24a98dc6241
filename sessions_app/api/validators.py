"""Input checks shared by the API serializers.

Text that PostgreSQL cannot store (NUL characters, lone surrogates from
``\\ud800``-style JSON escapes) is refused with a 400 that names the field,
instead of failing in the database driver: DRF's ``CharField`` already
refuses both, so the checks here cover what it does not see (the keys and
strings inside ``metadata``, text checked outside a serializer).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


def is_storable_text(text: str) -> bool:
    """No null character and no lone surrogate (which UTF-8 cannot encode)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_storable_text(value: str) -> str:
    if is_storable_text(value):
        return value
    if "\x00" in value:
        raise serializers.ValidationError("Null characters are not allowed.")
    raise serializers.ValidationError("Text must be valid Unicode (no lone surrogates).")


def _walk_strings(value: Any) -> None:
    if isinstance(value, str):
        check_storable_text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable_text(key)
            _walk_strings(item)
    elif isinstance(value, list):
        for item in value:
            _walk_strings(item)


def check_metadata(value: Any) -> dict:
    """A JSON object of bounded size whose strings the database can store."""
    if not isinstance(value, dict):
        raise serializers.ValidationError("Must be a JSON object.")
    _walk_strings(value)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > settings.API_METADATA_MAX_BYTES:
        raise serializers.ValidationError(
            f"At most {settings.API_METADATA_MAX_BYTES} bytes of JSON (got {size})."
        )
    return value


@extend_schema_field(OpenApiTypes.OBJECT)
class MetadataField(serializers.JSONField):
    """``metadata``: a JSON object, checked by :func:`check_metadata`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.validators.append(check_metadata)


def text_field(*, max_chars: int, allow_blank: bool = False, **kwargs: Any) -> serializers.CharField:
    """A text field that keeps whitespace as written. Like every ``CharField``
    it refuses what the database cannot store (null characters, lone surrogates)."""
    return serializers.CharField(
        max_length=max_chars, allow_blank=allow_blank, trim_whitespace=False, **kwargs
    )


class LimitedTextField(serializers.CharField):
    """Text whose length limit is a setting, read whenever a serializer is made.

    DRF copies declared fields into each serializer instance by calling the
    field's ``__init__`` again, so the limit follows settings (and tests'
    overrides) without rebuilding fields by hand; the schema shows it too.
    Whitespace is kept as written; text the database cannot store is refused
    (by ``CharField`` itself).
    """

    def __init__(self, *, limit_setting: str, **kwargs: Any) -> None:
        kwargs["max_length"] = getattr(settings, limit_setting)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
