"""Reading and checking a chat-completions request.

What Nexus cannot do answers 400 with ``param`` naming it, never silently
ignored; parameters at their neutral values (``n: 1``, ``logprobs: false``,
penalties of 0, ``parallel_tool_calls`` without ``tools``) are accepted,
because common clients send them by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from sessions_app.models import END_USER_MAX_CHARS
from sessions_app.question_dates import parse_asked_at
from sessions_app.validation import episode_text_problem, text_problem
from summaries.openai_api.errors import OpenAIError, invalid, unsupported
from summaries.openai_api.hints import CHAT_KEYS, chat_hints
from summaries.openai_api.model_names import served_model

#: The roles whose messages are passed on in front of the memory.
INSTRUCTION_ROLES = ("system", "developer")
BUDGET_MIN, BUDGET_MAX = 1, 1_000_000
STOP_MAX = 4
#: The longest ``user`` (or ``safety_identifier``) taken: it becomes the
#: session's ``end_user`` (and ``user`` is kept on each episode it stores);
#: OpenAI's own guidance is a hashed identifier, far shorter.
USER_MAX_CHARS = END_USER_MAX_CHARS
#: Keys read (or checked to be neutral) below; any other is refused by name.
KNOWN_KEYS = frozenset(
    {
        "model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens",
        "max_completion_tokens", "stop", "seed", "presence_penalty", "frequency_penalty", "user",
        "n", "logprobs", "top_logprobs", "parallel_tool_calls", "store", "metadata", "tools",
        "tool_choice", "functions", "function_call", "audio", "modalities", "response_format",
    }
) | CHAT_KEYS  # fmt: skip
RANGES = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str
    #: Its position in the request's ``messages``, to name it in an error.
    index: int = -1


@dataclass(slots=True)
class ChatRequest:
    """A checked request. ``question`` is the last user message; ``history``
    the user/assistant messages before it; ``instructions`` the system and
    developer messages, in order."""

    model: str
    question: str
    instructions: list[Message]
    history: list[Message]
    stream: bool = False
    include_usage: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    user: str | None = None
    session: str | None = None
    budget: int | None = None
    asked_at: datetime | None = None  # metadata.nexus_asked_at
    safety_identifier: str | None = None
    #: ``store: false``: the memory is read, nothing of the turn is written.
    store: bool = True

    @property
    def end_user(self) -> str | None:
        """Whom the client serves: ``user``, else ``safety_identifier``; ``None``: neither given."""
        return self.user or self.safety_identifier


def number_value(body: dict[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(name, f"{name!r} must be a number.")
    low, high = RANGES[name]
    if not low <= value <= high:
        raise invalid(name, f"{name!r} must be between {low:g} and {high:g}.")
    return float(value)


def integer_value(value: Any, name: str, *, minimum: int | None = None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(name, f"{name!r} must be an integer.")
    if minimum is not None and value < minimum:
        raise invalid(name, f"{name!r} must be at least {minimum}.")
    return value


def _text(content: Any, index: int) -> str:
    """A message's content: a string, or an array of text parts joined; text
    the database could not store (a NUL, a lone surrogate) is refused here,
    since the exchange and imported history are stored."""
    param = f"messages[{index}].content"
    text = _joined(content, param)
    problem = text_problem(text)
    if problem:
        raise invalid(param, problem)
    return text


def _joined(content: Any, param: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise invalid(param, f"{param!r} must be a string or an array of text parts.")
    parts = []
    for n, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "text":
            raise unsupported(f"{param}[{n}]", f"content parts of type {kind!r}")
        if not isinstance(part.get("text"), str):
            raise invalid(f"{param}[{n}].text", "A text part needs a string 'text'.")
        parts.append(part["text"])
    return "\n".join(parts)


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list) or not raw:
        raise invalid("messages", "'messages' must be a non-empty array.")
    messages = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise invalid(f"messages[{index}]", "Each message must be an object.")
        role = item.get("role")
        if role not in (*INSTRUCTION_ROLES, "user", "assistant"):
            raise unsupported(f"messages[{index}].role", f"messages of role {role!r}")
        for key in ("tool_calls", "function_call", "audio"):
            if item.get(key):
                raise unsupported(f"messages[{index}].{key}")
        messages.append(Message(role, _text(item.get("content"), index), index))
    return messages


def _refuse_unsupported(body: dict[str, Any]) -> None:
    for key in body:
        if key not in KNOWN_KEYS:
            raise OpenAIError(
                f"Unrecognized request argument supplied: {key}", param=key, code="unknown_parameter"
            )
    for key in ("tools", "functions"):
        if body.get(key):
            raise unsupported(key)
    for key in ("tool_choice", "function_call"):
        if body.get(key) not in (None, "none"):
            raise unsupported(key)
    if body.get("n") not in (None, 1):
        raise unsupported("n", "n other than 1")
    if body.get("logprobs") not in (None, False):
        raise unsupported("logprobs", "logprobs: true")
    if body.get("top_logprobs") not in (None, 0):
        raise unsupported("top_logprobs")
    if body.get("audio") is not None:
        raise unsupported("audio")
    if body.get("modalities") not in (None, ["text"]):
        raise unsupported("modalities", "modalities other than text")
    response_format = body.get("response_format")
    if response_format is not None and (
        not isinstance(response_format, dict) or response_format.get("type") != "text"
    ):
        raise unsupported("response_format", "a response_format other than text")


def _stop(value: Any) -> list[str] | str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) <= STOP_MAX and all(isinstance(s, str) for s in value):
        return value
    raise invalid("stop", f"'stop' must be a string or an array of at most {STOP_MAX} strings.")


def end_user(value: Any) -> str | None:
    """The end user's identifier: stored (on the session and its episodes),
    so held to what the database and the metadata limit take."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid("user", "'user' must be a string.")
    if len(value) > USER_MAX_CHARS:
        raise invalid("user", f"'user' must be at most {USER_MAX_CHARS} characters (got {len(value)}).")
    problem = text_problem(value)
    if problem:
        raise invalid("user", f"'user': {problem}")
    return value


def stored(value: Any) -> bool:
    """``store``: absent or ``true`` keeps the turn, ``false`` keeps nothing."""
    if value is not None and not isinstance(value, bool):
        raise invalid("store", "'store' must be a boolean.")
    return value is not False


def _max_tokens(body: dict[str, Any]) -> int | None:
    """``max_completion_tokens`` (the newer name) else ``max_tokens``, at most
    ``CHAT_MAX_REPLY_TOKENS``: a larger cap no model window holds, and the
    model would refuse it (a 502) after memory was built."""
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = integer_value(body.get(name), name, minimum=1)
    limit = settings.CHAT_MAX_REPLY_TOKENS
    if value is not None and value > limit:
        raise invalid(name, f"{name!r} must be at most {limit} (CHAT_MAX_REPLY_TOKENS).")
    return value


def nexus_metadata(value: Any) -> tuple[str | None, int | None, datetime | None]:
    """``nexus_session``, ``nexus_budget`` (an integer or a numeric string)
    and ``nexus_asked_at`` (ISO 8601 with its UTC offset)."""
    if value is None:
        return None, None, None
    if not isinstance(value, dict):
        raise invalid("metadata", "'metadata' must be an object.")
    session = value.get("nexus_session")
    if session is not None and not isinstance(session, str):
        raise invalid("metadata.nexus_session", "'metadata.nexus_session' must be a session uuid.")
    budget = value.get("nexus_budget")
    if isinstance(budget, str):
        try:
            budget = int(budget.strip())
        except ValueError:
            raise invalid("metadata.nexus_budget", "'metadata.nexus_budget' must be an integer.") from None
    budget = integer_value(budget, "metadata.nexus_budget", minimum=BUDGET_MIN)
    if budget is not None and budget > BUDGET_MAX:
        raise invalid("metadata.nexus_budget", f"'metadata.nexus_budget' must be at most {BUDGET_MAX}.")
    asked_at = value.get("nexus_asked_at")
    if asked_at is not None:
        try:
            asked_at = parse_asked_at(asked_at)
        except ValueError as err:
            raise invalid("metadata.nexus_asked_at", f"'metadata.nexus_asked_at' {err}.") from None
    return session or None, budget, asked_at


def parse_request(body: Any, *, header_session: str | None) -> ChatRequest:
    """The checked request, or ``OpenAIError`` naming what is wrong."""
    if not isinstance(body, dict):
        raise invalid("", "The request body must be a JSON object.")
    _refuse_unsupported(body)
    messages = _messages(body.get("messages"))
    model = served_model(body.get("model"))
    last = messages[-1]
    if last.role != "user" or not last.content.strip():
        raise invalid("messages", "The last message must be a user message with text.")
    problem = episode_text_problem(last.content)  # it is stored as the episode's user_input
    if problem:
        raise invalid("messages", f"The last user message: {problem}")
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise invalid("stream", "'stream' must be a boolean.")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise invalid("stream_options", "'stream_options' must be an object.")
    user = end_user(body.get("user"))
    safety_identifier = chat_hints(body)
    store = stored(body.get("store"))
    session, budget, asked_at = nexus_metadata(body.get("metadata"))
    if header_session and session and header_session.strip().lower() != session.strip().lower():
        raise invalid(
            "metadata.nexus_session", "'metadata.nexus_session' differs from the X-Nexus-Session header."
        )
    max_tokens = _max_tokens(body)
    sampling = {
        "top_p": number_value(body, "top_p"),
        "stop": _stop(body.get("stop")),
        "seed": integer_value(body.get("seed"), "seed"),
        "presence_penalty": number_value(body, "presence_penalty"),
        "frequency_penalty": number_value(body, "frequency_penalty"),
        "user": user or None,
    }
    return ChatRequest(
        model=model,
        question=last.content,
        instructions=[m for m in messages[:-1] if m.role in INSTRUCTION_ROLES],
        history=[m for m in messages[:-1] if m.role not in INSTRUCTION_ROLES],
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        temperature=number_value(body, "temperature"),
        max_tokens=max_tokens,
        sampling={name: value for name, value in sampling.items() if value is not None},
        user=user or None,
        session=(header_session or session or None),
        budget=budget,
        asked_at=asked_at,
        safety_identifier=safety_identifier,
        store=store,
    )
