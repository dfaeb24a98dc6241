"""Input checks shared by the API serializers.

The checks themselves are ``sessions_app.validation``'s; here they become
DRF validators, so a problem is a 400 that names the field. DRF's
``CharField`` already refuses text the database cannot store, so these
cover what it does not see (the keys and strings inside ``metadata``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app.models import END_USER_MAX_CHARS
from sessions_app.question_dates import parse_asked_at
from sessions_app.validation import metadata_problem, text_problem


def check_storable_text(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise serializers.ValidationError(problem)
    return value


def check_metadata(value: Any) -> dict:
    """A JSON object of bounded size whose strings the database can store."""
    problem = metadata_problem(value)
    if problem:
        raise serializers.ValidationError(problem)
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


@extend_schema_field(OpenApiTypes.DATETIME)
class AskedAtField(serializers.Field):
    """``asked_at``: when the question is asked, ISO 8601 with its UTC offset
    (``sessions_app.question_dates.parse_asked_at``); the dates a question
    names are resolved against it. Optional: now when left out."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            "When the question is asked (ISO 8601 with a UTC offset; default now): dates it names, "
            "such as 'last week', are resolved against it.",
        )
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> datetime:
        try:
            return parse_asked_at(data)
        except ValueError as err:
            raise serializers.ValidationError(f"asked_at {err}.") from None

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


def end_user_field(**kwargs: Any) -> serializers.CharField:
    """An end user's id as a filter takes it: optional, empty for the owner in
    person, kept as written; like every ``CharField`` it refuses a null
    character or a lone surrogate (which no query could compare) by name."""
    return serializers.CharField(
        required=False, allow_blank=True, max_length=END_USER_MAX_CHARS, trim_whitespace=False, **kwargs
    )
