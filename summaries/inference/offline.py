"""The embedded default: no model server at all.

Summaries are the extractive digest (summaries.digest) of the exchanges written into
the prompt, read back with ``parse_exchanges``, so the summarization path is
exactly the one a real model would see. Chat replies say plainly that no
chat model is configured instead of pretending to be one.
"""

from __future__ import annotations

from collections.abc import Iterator

from summaries.digest import extractive_digest
from summaries.inference.base import (
    ChatStream,
    Completion,
    InferenceClient,
    PermanentInferenceError,
    Sampling,
    Stopwatch,
    user_message,
)
from summaries.prompts import ASSISTANT_PREFIX, parse_exchanges

#: Recorded as the ``model`` of everything this backend writes.
OFFLINE_MODEL = "offline-digest"

OFFLINE_MARKER = "[offline]"
OFFLINE_CHAT_REPLY = (
    f"{OFFLINE_MARKER} No chat model is configured (INFERENCE_BACKEND=offline), so this reply "
    "was not written by a model. Set INFERENCE_BACKEND and INFERENCE_SERVICE_URL to chat."
)

_PREVIOUS = "Previous summary:\n"
_NEW = "\n\nNew exchanges:\n"


def prompt_exchanges(prompt: str) -> list[tuple[str, str]]:
    """The exchanges in a summary prompt, tolerating one whose start was cut.

    A single episode longer than ``SUMMARY_MAX_CHARS`` arrives with its
    oldest text cut off, ``User:`` label included, so ``parse_exchanges``
    finds nothing; the text that is left is still digested (what precedes
    ``Assistant:`` as the question, the rest as the answer) rather than
    failing that episode for good.
    """
    exchanges = parse_exchanges(prompt)
    if exchanges:
        return exchanges
    body = prompt
    for marker in ("\nNew exchanges:\n", "\nConversation:\n"):
        if marker in body:
            body = body.split(marker, 1)[1]
            break
    else:
        return []  # not a summary prompt at all
    body = body.strip()
    if not body:
        return []
    user, found, response = body.partition(f"\n{ASSISTANT_PREFIX}")
    return [(user.strip(), response.strip())] if found else [("", body)]


def previous_summary(prompt: str) -> str | None:
    """The existing summary quoted in an update prompt, or None for a fresh one."""
    if _PREVIOUS not in prompt:
        return None
    quoted = prompt.split(_PREVIOUS, 1)[1]
    return quoted.split(_NEW, 1)[0].strip()


class OfflineClient(InferenceClient):
    """Needs no server; ``health()`` always passes.

    ``model``, ``temperature`` and ``max_tokens`` are accepted for the common
    interface and ignored: the digest is deterministic.
    """

    name = "offline"

    def _complete(self, prompt: str, *, model: str, temperature: float, max_tokens: int) -> Completion:
        """Digest of the prompt's exchanges; for an update prompt the previous
        summary, a newline, then the digest of the new exchanges."""
        watch = Stopwatch()
        digest = extractive_digest(prompt_exchanges(prompt))
        if not digest:
            raise PermanentInferenceError(
                "found no 'User:/Assistant:' exchanges in the prompt to digest", backend=self.name
            )
        previous = previous_summary(prompt)
        text = f"{previous}\n{digest}" if previous else digest
        return self._offline(text, user_message(prompt), watch)

    def _chat(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> Completion:
        return self._offline(OFFLINE_CHAT_REPLY, messages, Stopwatch())

    def _chat_stream(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> ChatStream:
        watch = Stopwatch()

        def chunks() -> Iterator[str]:
            # Word by word, so pages exercise the same streaming path as with a model.
            words = OFFLINE_CHAT_REPLY.split(" ")
            for index, word in enumerate(words):
                yield word if index == len(words) - 1 else f"{word} "

        return ChatStream(chunks(), lambda text: self._offline(text, messages, watch))

    def health(self) -> None:
        return None

    def _offline(self, text: str, messages: list[dict[str, str]], watch: Stopwatch) -> Completion:
        return self._finished(
            text=text,
            model=OFFLINE_MODEL,
            prompt_tokens=None,
            completion_tokens=None,
            messages=messages,
            watch=watch,
        )
