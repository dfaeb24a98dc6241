"""The model a request names, mapped to the one Nexus serves.

``CHAT_MODEL`` answers to its own name and to those ``OPENAI_MODEL_ALIASES``
maps to it (``"*"``: any other name), so a framework's default model name
(``gpt-4o-mini``, the Agents SDK's) reaches it without a code change.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from summaries.openai_api.errors import OpenAIError, invalid

ANY_NAME = "*"


def served_model(requested: Any) -> str:
    """``CHAT_MODEL`` for a name that means it; a 404 ``model_not_found`` otherwise."""
    if not isinstance(requested, str) or not requested:
        raise invalid("model", "'model' is required.")
    served = settings.CHAT_MODEL
    aliases = settings.OPENAI_MODEL_ALIASES
    if served in (requested, aliases.get(requested, aliases.get(ANY_NAME))):
        return served
    raise OpenAIError(
        f"The model {requested!r} does not exist; this server offers {served!r}.",
        status=404,
        param="model",
        code="model_not_found",
    )
