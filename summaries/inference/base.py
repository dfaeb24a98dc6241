"""Types shared by every inference backend: the result, the errors, the client base.

Callers sort failures by one flag, ``err.transient``: transient failures
(timeouts, refused connections, 429, 5xx) are worth retrying later,
permanent ones (other 4xx, malformed payloads, empty content) are not.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django.conf import settings

from sessions_app.tokens import count_tokens
from sessions_app.validation import storable

#: A chat message as the OpenAI and Ollama APIs take it: ``{"role": ..., "content": ...}``.
Message = Mapping[str, str]
#: Sampling parameters beyond temperature and max_tokens, by their OpenAI names:
#: ``top_p``, ``stop``, ``seed``, ``presence_penalty``, ``frequency_penalty``,
#: ``user``. Each backend passes on those it takes (Ollama: all but ``user``,
#: which it rejects; ``offline`` and ``nexus``: none).
Sampling = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Completion:
    """One finished model answer and what it cost.

    ``text`` is never empty: an empty answer raises ``PermanentInferenceError``
    instead, so nothing empty can be stored as a summary.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int


class InferenceError(Exception):
    """A model call that produced no usable answer.

    ``transient`` says whether the same call may succeed later. ``status_code``
    is the HTTP status when there was one.
    """

    transient: bool = False

    def __init__(
        self,
        message: str,
        *,
        backend: str = "",
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.backend = backend
        self.status_code = status_code

    def __str__(self) -> str:
        prefix = f"{self.backend}: " if self.backend else ""
        return f"{prefix}{self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        # Celery's prefork pool pickles a task's exception back to the parent;
        # the default reduce would drop the keyword-only fields.
        state = {"backend": self.backend, "status_code": self.status_code}
        return (_rebuild_error, (type(self), self.message, state))


def _rebuild_error(cls: type[InferenceError], message: str, state: dict[str, object]) -> InferenceError:
    return cls(message, **state)  # type: ignore[arg-type]


class TransientInferenceError(InferenceError):
    """Timeouts, connection errors, 429 and 5xx: retry with backoff."""

    transient = True


class PermanentInferenceError(InferenceError):
    """Other 4xx, malformed or empty answers, unsupported calls: do not retry."""

    transient = False


def user_message(prompt: str) -> list[dict[str, str]]:
    """The utility call sends its whole prompt as the single user message;
    the model server applies the model's chat template."""
    return [{"role": "user", "content": prompt}]


def normalize_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Plain ``{"role", "content"}`` dicts, so any mapping (or a model's
    ``values()`` row) can be passed and the JSON body stays exact."""
    normalized: list[dict[str, str]] = []
    for message in messages:
        try:
            normalized.append({"role": str(message["role"]), "content": str(message["content"])})
        except KeyError as exc:
            raise PermanentInferenceError(f"chat message without {exc.args[0]!r}: {message!r}") from exc
    if not normalized:
        raise PermanentInferenceError("chat needs at least one message")
    return normalized


def prompt_token_estimate(messages: Sequence[Message]) -> int:
    """Input tokens when the server reports none (content only, no template overhead)."""
    return sum(count_tokens(m["content"]) for m in messages)


def reported_count(payload: object, key: str) -> int | None:
    """A token count from a server payload, or None when absent or nonsense
    (the caller then counts the tokens itself)."""
    value = payload.get(key) if isinstance(payload, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ChatStream(Iterator[str]):
    """The text chunks of a streamed chat reply, in order.

    ``chat_stream()`` returns it already primed with the first chunk, so a
    refused connection, an error status or a reply without any text raises
    there, before a web view has sent anything to its client. Errors later in
    the stream raise from the iteration. Once exhausted, ``completion`` holds
    the whole reply with token counts and duration (``None`` until then).
    ``close()`` ends the HTTP response early, e.g. when the web client goes
    away; Django's ``StreamingHttpResponse`` calls it.
    """

    def __init__(self, chunks: Iterator[str], finish: Callable[[str], Completion]) -> None:
        self._chunks = chunks
        self._finish = finish
        self._parts: list[str] = []
        self._first: str | None = None
        self.completion: Completion | None = None

    def prime(self) -> ChatStream:
        """Read the first chunk now (see the class docstring)."""
        try:
            self._first = next(self._chunks)
        except StopIteration:
            self.completion = self._finish("")  # raises: an empty reply is never returned
        return self

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> str:
        if self._first is not None:
            chunk, self._first = self._first, None
        else:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                if self.completion is None:
                    self.completion = self._finish("".join(self._parts))
                raise
        # What the database cannot store never reaches the client either: the stored reply is what was shown.
        chunk = storable(chunk)
        self._parts.append(chunk)
        return chunk

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


class Stopwatch:
    """Milliseconds since construction; every backend measures its calls the same way."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    @property
    def elapsed_ms(self) -> int:
        return round((time.perf_counter() - self._start) * 1000)


class InferenceClient(ABC):
    """A model backend. Instances hold no per-call state and are shared per process.

    Settings (URL, key, timeouts) are read at call time, so a changed setting
    applies without rebuilding the client (and tests can override them).
    """

    #: The ``INFERENCE_BACKEND`` value that selects this client.
    name: ClassVar[str]

    def complete(
        self,
        prompt: str,
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """The utility call: ``prompt`` as one user message.

        Defaults are the summarization settings (``UTILITY_MODEL``,
        ``SUMMARY_TEMPERATURE``, ``SUMMARY_GEN_MAX_TOKENS``).
        """
        return self._complete(
            prompt,
            model=model or settings.UTILITY_MODEL,
            temperature=settings.SUMMARY_TEMPERATURE if temperature is None else temperature,
            max_tokens=settings.SUMMARY_GEN_MAX_TOKENS if max_tokens is None else max_tokens,
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sampling: Sampling | None = None,
    ) -> Completion:
        """One chat reply. ``None`` for temperature/max_tokens leaves the server's default;
        ``sampling`` adds the further OpenAI-named parameters (see ``Sampling``)."""
        return self._chat(
            normalize_messages(messages),
            model=model or settings.CHAT_MODEL,
            temperature=temperature,
            max_tokens=max_tokens,
            sampling=sampling,
        )

    def chat_stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sampling: Sampling | None = None,
    ) -> ChatStream:
        """A chat reply as text chunks (see ``ChatStream`` for when errors raise)."""
        return self._chat_stream(
            normalize_messages(messages),
            model=model or settings.CHAT_MODEL,
            temperature=temperature,
            max_tokens=max_tokens,
            sampling=sampling,
        ).prime()

    @abstractmethod
    def health(self) -> None:
        """Return quietly when the backend answers; raise ``InferenceError`` otherwise."""

    # Backends implement these with every argument resolved.

    def _complete(self, prompt: str, *, model: str, temperature: float, max_tokens: int) -> Completion:
        return self._chat(user_message(prompt), model=model, temperature=temperature, max_tokens=max_tokens)

    @abstractmethod
    def _chat(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> Completion: ...

    @abstractmethod
    def _chat_stream(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> ChatStream: ...

    def _finished(
        self,
        *,
        text: str | None,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        messages: Sequence[Message],
        watch: Stopwatch,
    ) -> Completion:
        """The ``Completion`` for an answer, refusing empty text, replacing
        what the database cannot store (``sessions_app.validation.storable``)
        and filling token counts the server did not report with our own count."""
        if text is None or not text.strip():
            raise PermanentInferenceError("the model returned empty content", backend=self.name)
        # Read the clock first: our own token counting is not the model's time.
        duration_ms = watch.elapsed_ms
        # Surrounding blank lines are template residue, not content worth storing;
        # a null character or a lone surrogate (a JSON escape a server may send) could not be stored.
        text = storable(text.strip())
        return Completion(
            text=text,
            model=model,
            prompt_tokens=prompt_tokens if prompt_tokens is not None else prompt_token_estimate(messages),
            completion_tokens=completion_tokens if completion_tokens is not None else count_tokens(text),
            duration_ms=duration_ms,
        )
