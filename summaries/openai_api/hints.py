"""The newer request fields that tune OpenAI's own service: accepted when
well formed, so clients that send them by default work, and otherwise
without effect here.

``safety_identifier`` and ``prompt_cache_key`` identify an end user or a
shared prompt prefix to OpenAI; ``reasoning_effort`` and ``verbosity`` are
hints to reasoning models; ``service_tier`` and ``prompt_cache_retention``
choose how OpenAI bills and caches. The chat model Nexus serves has one tier
and no reasoning budget, so each is checked (a malformed value answers 400
naming it) and passed on to nobody; answers report the tier that served
them, ``default``.
"""

from __future__ import annotations

from typing import Any

from sessions_app.models import END_USER_MAX_CHARS
from sessions_app.validation import text_problem
from summaries.openai_api.errors import invalid

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
VERBOSITIES = ("low", "medium", "high")
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")
CACHE_RETENTIONS = ("in_memory", "24h")
#: The tier every answer is served by.
SERVED_TIER = "default"
#: The longest identifier taken, as for ``user``: it may be stored with the exchange.
IDENTIFIER_MAX_CHARS = 256
#: The fields of this kind that both endpoints take at the top level.
COMMON_KEYS = frozenset({"safety_identifier", "prompt_cache_key", "service_tier", "prompt_cache_retention"})
#: Those only /v1/chat/completions takes at the top level (Responses nests them).
CHAT_KEYS = COMMON_KEYS | {"reasoning_effort", "verbosity"}


def choice(value: Any, param: str, choices: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in choices:
        raise invalid(param, f"{param!r} must be one of: {', '.join(choices)}.")
    return value


def identifier(value: Any, param: str) -> str | None:
    """A string the database could store, of at most ``IDENTIFIER_MAX_CHARS``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(param, f"{param!r} must be a string.")
    if len(value) > IDENTIFIER_MAX_CHARS:
        raise invalid(
            param, f"{param!r} must be at most {IDENTIFIER_MAX_CHARS} characters (got {len(value)})."
        )
    if problem := text_problem(value):
        raise invalid(param, f"{param!r}: {problem}")
    return value


def common_hints(body: dict[str, Any]) -> str | None:
    """Check the fields both endpoints take; the ``safety_identifier``."""
    identifier(body.get("prompt_cache_key"), "prompt_cache_key")
    choice(body.get("service_tier"), "service_tier", SERVICE_TIERS)
    choice(body.get("prompt_cache_retention"), "prompt_cache_retention", CACHE_RETENTIONS)
    found = identifier(body.get("safety_identifier"), "safety_identifier")
    if found and len(found) > END_USER_MAX_CHARS:
        # Without ``user`` it names the session's end user, which holds no more.
        raise invalid(
            "safety_identifier", f"'safety_identifier' must be at most {END_USER_MAX_CHARS} characters."
        )
    return found


def chat_hints(body: dict[str, Any]) -> str | None:
    """Check /v1/chat/completions' fields of this kind; the ``safety_identifier``."""
    choice(body.get("reasoning_effort"), "reasoning_effort", REASONING_EFFORTS)
    choice(body.get("verbosity"), "verbosity", VERBOSITIES)
    return common_hints(body)
