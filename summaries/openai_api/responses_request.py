"""Reading and checking a ``POST /v1/responses`` request for text.

It becomes the ``ChatRequest`` a chat-completions call would: ``instructions``
and system/developer items are the instructions, the last user item the
question, earlier user/assistant items the history; ``previous_response_id``
names the session it continues. As on chat completions, what Nexus cannot
do answers 400 naming the field, and fields at their neutral values (no
tools, ``include: []``, a text format) or informational ones (``reasoning``,
``text.verbosity``, ``service_tier``) are accepted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from sessions_app.validation import episode_text_problem, text_problem
from summaries.openai_api import errors
from summaries.openai_api.errors import OpenAIError, invalid
from summaries.openai_api.hints import COMMON_KEYS, REASONING_EFFORTS, VERBOSITIES, choice, common_hints
from summaries.openai_api.model_names import served_model
from summaries.openai_api.request import (
    INSTRUCTION_ROLES,
    ChatRequest,
    Message,
    end_user,
    integer_value,
    nexus_metadata,
    number_value,
    stored,
)
from summaries.openai_api.response_ids import session_of

ENDPOINT = "/v1/responses"
KNOWN_KEYS = frozenset(
    {
        "model", "input", "instructions", "previous_response_id", "stream", "stream_options", "store",
        "metadata", "temperature", "top_p", "max_output_tokens", "user", "tools", "tool_choice",
        "parallel_tool_calls", "max_tool_calls", "include", "reasoning", "text", "truncation", "background",
        "top_logprobs", "conversation", "prompt",
    }
) | COMMON_KEYS  # fmt: skip
TEXT_PARTS = ("input_text", "output_text")
REASONING_SUMMARIES = (None, "auto", "concise", "detailed")


@dataclass(slots=True)
class ResponsesRequest:
    chat: ChatRequest
    previous_response_id: str | None
    #: Whether ``chat.session`` came from ``previous_response_id`` (its 404 names that).
    session_from_previous: bool
    #: The request's settings as the response object repeats them.
    echo: dict[str, Any]


def unsupported(param: str, what: str | None = None) -> OpenAIError:
    return errors.unsupported(param, what, endpoint=ENDPOINT)


def previous_not_found(value: Any) -> OpenAIError:
    return OpenAIError(
        f"Previous response with id {value!r} not found.",
        status=404,
        param="previous_response_id",
        code="previous_response_not_found",
    )


def _content(content: Any, param: str) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for n, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in TEXT_PARTS:
                raise unsupported(f"{param}[{n}]", f"content parts of type {kind!r}")
            if not isinstance(part.get("text"), str):
                raise invalid(f"{param}[{n}].text", "A text part needs a string 'text'.")
            parts.append(part["text"])
        text = "\n".join(parts)
    else:
        raise invalid(param, f"{param!r} must be a string or an array of text parts.")
    if problem := text_problem(text):
        raise invalid(param, problem)
    return text


def _input(raw: Any) -> list[Message]:
    """``input``: a string (one user message) or message items."""
    if isinstance(raw, str):
        if problem := text_problem(raw):
            raise invalid("input", problem)
        return [Message("user", raw, 0)]
    if not isinstance(raw, list) or not raw:
        raise invalid("input", "'input' must be a string or a non-empty array of message items.")
    messages = []
    for index, item in enumerate(raw):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise invalid(param, "Each input item must be an object.")
        kind = item.get("type", "message")
        if kind != "message":
            raise unsupported(param, f"input items of type {kind!r}")
        role = item.get("role")
        if role not in (*INSTRUCTION_ROLES, "user", "assistant"):
            raise unsupported(f"{param}.role", f"messages of role {role!r}")
        messages.append(Message(role, _content(item.get("content"), f"{param}.content"), index))
    return messages


def _neutral(body: dict[str, Any]) -> None:
    """The fields Nexus takes only at values that ask for nothing it lacks."""
    for key in body:
        if key not in KNOWN_KEYS:
            raise OpenAIError(
                f"Unrecognized request argument supplied: {key}", param=key, code="unknown_parameter"
            )
    for key in ("tools", "include", "background", "conversation", "prompt", "top_logprobs"):
        if body.get(key):
            raise unsupported(key)
    if body.get("tool_choice") not in (None, "none", "auto"):
        raise unsupported("tool_choice")
    choice(body.get("truncation"), "truncation", ("auto", "disabled"))
    for key in ("parallel_tool_calls", "stream"):
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise invalid(key, f"{key!r} must be a boolean.")
    integer_value(body.get("max_tool_calls"), "max_tool_calls", minimum=0)
    if not isinstance(body.get("stream_options") or {}, dict):
        raise invalid("stream_options", "'stream_options' must be an object.")


def _settings_objects(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """``reasoning`` and ``text``: their effort and verbosity (informational), a text format only."""
    reasoning = body.get("reasoning") or {}
    text = body.get("text") or {}
    for name, value in (("reasoning", reasoning), ("text", text)):
        if not isinstance(value, dict):
            raise invalid(name, f"{name!r} must be an object.")
    effort = choice(reasoning.get("effort"), "reasoning.effort", REASONING_EFFORTS)
    for key in ("summary", "generate_summary"):
        if reasoning.get(key) not in REASONING_SUMMARIES:
            raise invalid(f"reasoning.{key}", f"'reasoning.{key}' must be auto, concise or detailed.")
    text_format = text.get("format")
    if text_format is not None and (not isinstance(text_format, dict) or text_format.get("type") != "text"):
        raise unsupported("text.format", "a text.format other than text")
    return effort, choice(text.get("verbosity"), "text.verbosity", VERBOSITIES)


def _previous(value: Any) -> uuid.UUID | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid("previous_response_id", "'previous_response_id' must be a response id.")
    session = session_of(value)
    if session is None:
        raise previous_not_found(value)
    return session


def _session(header: str | None, named: str | None, previous: uuid.UUID | None) -> str | None:
    """The one session the header, ``metadata.nexus_session`` and ``previous_response_id`` agree on."""
    chosen = header or named
    if header and named and header.strip().lower() != named.strip().lower():
        raise invalid(
            "metadata.nexus_session", "'metadata.nexus_session' differs from the X-Nexus-Session header."
        )
    if previous is None:
        return chosen
    if chosen and chosen.strip().lower() not in (str(previous), previous.hex):
        raise invalid("previous_response_id", "'previous_response_id' belongs to another session than named.")
    return str(previous)


def _max_output_tokens(value: Any) -> int | None:
    value = integer_value(value, "max_output_tokens", minimum=1)
    limit = settings.CHAT_MAX_REPLY_TOKENS
    if value is not None and value > limit:
        raise invalid(
            "max_output_tokens", f"'max_output_tokens' must be at most {limit} (CHAT_MAX_REPLY_TOKENS)."
        )
    return value


def parse_responses(body: Any, *, header_session: str | None) -> ResponsesRequest:
    """The checked request, or ``OpenAIError`` naming what is wrong."""
    if not isinstance(body, dict):
        raise invalid("", "The request body must be a JSON object.")
    _neutral(body)
    model = served_model(body.get("model"))
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("instructions", "'instructions' must be a string.")
    if instructions and (problem := text_problem(instructions)):
        raise invalid("instructions", problem)
    messages = _input(body.get("input"))
    last = messages[-1]
    if last.role != "user" or not last.content.strip():
        raise invalid("input", "The last input item must be a user message with text.")
    if problem := episode_text_problem(last.content):  # stored as the episode's user_input
        raise invalid("input", f"The last user message: {problem}")
    effort, verbosity = _settings_objects(body)
    safety_identifier = common_hints(body)
    user = end_user(body.get("user"))
    named, budget, asked_at = nexus_metadata(body.get("metadata"))
    previous = _previous(body.get("previous_response_id"))
    top_p = number_value(body, "top_p")
    system = [Message("system", instructions, -1)] if instructions else []
    chat = ChatRequest(
        model=model,
        question=last.content,
        instructions=system + [m for m in messages[:-1] if m.role in INSTRUCTION_ROLES],
        history=[m for m in messages[:-1] if m.role not in INSTRUCTION_ROLES],
        stream=bool(body.get("stream")),
        temperature=number_value(body, "temperature"),
        max_tokens=_max_output_tokens(body.get("max_output_tokens")),
        sampling={k: v for k, v in (("top_p", top_p), ("user", user)) if v is not None},
        user=user,
        session=_session(header_session, named, previous),
        budget=budget,
        asked_at=asked_at,
        safety_identifier=safety_identifier,
        store=stored(body.get("store")),
    )
    echo = {
        "instructions": instructions,
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": effort, "summary": None},
        "text": {"format": {"type": "text"}, "verbosity": verbosity or "medium"},
        "tool_choice": body.get("tool_choice") or "auto",
        "truncation": body.get("truncation") or "disabled",
        "max_output_tokens": chat.max_tokens,
        "temperature": 1.0 if chat.temperature is None else chat.temperature,
        "top_p": 1.0 if top_p is None else top_p,
        "user": user,
        "safety_identifier": safety_identifier,
        "prompt_cache_key": body.get("prompt_cache_key"),
        "store": chat.store,
    }
    return ResponsesRequest(chat, body.get("previous_response_id"), previous is not None, echo)
