"""The embedded default: no model server at all.

Summaries are extractive (``summaries.extractive``): whole sentences quoted
from the exchanges written into the prompt, read back with
``parse_exchanges``, so the summarization path is exactly the one a real
model would see. Chat replies say plainly that no chat model is configured
instead of pretending to be one; the chat turn then shows what memory found
for the message beside the reply (``summaries.offline_memory``). Those
replies are never quoted in a summary.
"""

from __future__ import annotations

from collections.abc import Iterator

from summaries.extractive import extractive_summary
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
from summaries.sentences import sentences

#: Recorded as the ``model`` of everything this backend writes.
OFFLINE_MODEL = "offline-digest"

OFFLINE_MARKER = "[offline]"
OFFLINE_CHAT_REPLY = (
    f"{OFFLINE_MARKER} No chat model is configured, so no reply was written. "
    "Here is what Nexus remembers for this message."
)
# What every reply of this backend has begun with, this one's and earlier wordings'.
_REPLY_START = f"{OFFLINE_MARKER} No chat model is configured"


def is_offline_reply(response: str) -> bool:
    """Whether ``response`` is this backend's chat reply (in any wording it has had)."""
    return response.lstrip().startswith(_REPLY_START)


_PREVIOUS = "Previous summary:\n"
_NEW = "\n\nNew exchanges:\n"


def prompt_exchanges(prompt: str) -> list[tuple[str, str]]:
    """The exchanges in a summary prompt, tolerating one whose start was cut.

    A single episode longer than ``SUMMARY_MAX_CHARS`` arrives with its
    oldest text cut off, ``User:`` label included, so ``parse_exchanges``
    finds nothing; the text that is left is still summarized (what precedes
    ``Assistant:`` as the question, the rest as the answer, the sentence the
    cut went through left out) rather than failing that episode for good.
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
    if found:
        return [(_without_first_sentence(user), response.strip())]
    return [("", _without_first_sentence(body))]


def _without_first_sentence(text: str) -> str:
    """``text`` less its first sentence, which the cut went through (whole sentences only)."""
    return " ".join(sentences(text)[1:])


def previous_summary(prompt: str) -> str | None:
    """The existing summary quoted in an update prompt, or None for a fresh one."""
    if _PREVIOUS not in prompt:
        return None
    quoted = prompt.split(_PREVIOUS, 1)[1]
    return quoted.split(_NEW, 1)[0].strip()


class OfflineClient(InferenceClient):
    """Needs no server; ``health()`` always passes.

    ``model`` and ``temperature`` are accepted for the common interface and
    ignored: the summary is deterministic; it stays within ``max_tokens``.
    """

    name = "offline"

    def _complete(self, prompt: str, *, model: str, temperature: float, max_tokens: int) -> Completion:
        """The extractive summary of the prompt's exchanges; for an update
        prompt, of the previous summary and the new exchanges together.
        This backend's own chat replies are left out (they say nothing of the
        conversation), and so is any sentence of an earlier summary that
        quoted one."""
        watch = Stopwatch()
        exchanges = prompt_exchanges(prompt)
        if not exchanges:
            raise PermanentInferenceError(
                "found no 'User:/Assistant:' exchanges in the prompt to summarize", backend=self.name
            )
        text = extractive_summary(
            [(user, "" if is_offline_reply(response) else response) for user, response in exchanges],
            previous=previous_summary(prompt),
            max_tokens=max_tokens,
            drop=lambda sentence: OFFLINE_MARKER in sentence,
        )
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
