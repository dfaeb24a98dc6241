"""How large a context window a call asks the model server for.

Ollama loads a model with a window of ``num_ctx`` tokens (4,096 unless told
otherwise) and silently drops whatever of the prompt does not fit. The
context puts the question first, exactly where that cut falls, so every
Ollama call names a window that holds its prompt and its reply:

- the prompt is counted with cl100k (``count_tokens``) over every message,
  plus ``TOKENS_PER_MESSAGE`` for the chat template around each one and
  ``REPLY_PRIMING_TOKENS`` for the assistant header the reply starts from;
- that count is raised by ``TOKENIZER_MARGIN_PERCENT``, because the model's
  own tokenizer may cut the same text into more pieces than cl100k does;
- the reply's cap (``num_predict``) is added, ``REPLY_ALLOWANCE`` when the
  call sets none;
- the sum is rounded up to a power of two from ``MIN_NUM_CTX``: Ollama
  reloads the model whenever ``num_ctx`` changes, so few distinct values
  keep it loaded; and it is bounded by ``settings.OLLAMA_NUM_CTX_MAX``.

A call that cannot fit under that bound raises ``ContextWindowExceeded``, a
permanent error, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from sessions_app.tokens import count_tokens
from summaries.inference.base import Message, PermanentInferenceError

#: Ollama's own default window, and the smallest one asked for.
MIN_NUM_CTX = 4096
#: Chat template tokens around each message (role header and separators).
TOKENS_PER_MESSAGE = 4
#: The assistant header the reply is generated after.
REPLY_PRIMING_TOKENS = 3
#: How many more tokens (in percent) the model's tokenizer may count than cl100k.
TOKENIZER_MARGIN_PERCENT = 15
#: Room kept for a reply whose call sets no ``max_tokens`` (chat turns leave it to the server).
REPLY_ALLOWANCE = 1024


class ContextWindowExceeded(PermanentInferenceError):
    """The prompt and its reply need a larger window than ``OLLAMA_NUM_CTX_MAX``.

    The message names the estimate and the setting, and no address, so it
    can be shown to the person chatting. ``reply_tokens`` is the call's reply
    cap when it set one (so a caller can be told which of its parameters to lower).
    """

    reply_tokens: int | None = None


def prompt_tokens(messages: Sequence[Message]) -> int:
    """The prompt's tokens as cl100k counts them, chat template included."""
    return sum(count_tokens(m["content"]) + TOKENS_PER_MESSAGE for m in messages) + REPLY_PRIMING_TOKENS


def tokens_needed(messages: Sequence[Message], max_tokens: int | None) -> int:
    """Prompt tokens with the tokenizer margin, plus the reply's cap."""
    counted = prompt_tokens(messages)
    # Integer ceiling of counted * (1 + margin): no float rounding at the boundaries.
    with_margin = -(-counted * (100 + TOKENIZER_MARGIN_PERCENT) // 100)
    return with_margin + (REPLY_ALLOWANCE if max_tokens is None else max_tokens)


def num_ctx_for(messages: Sequence[Message], max_tokens: int | None, *, backend: str = "") -> int:
    """The ``num_ctx`` to send: the smallest step that holds the call, at
    most ``OLLAMA_NUM_CTX_MAX``; ``ContextWindowExceeded`` when none does."""
    limit = settings.OLLAMA_NUM_CTX_MAX
    needed = tokens_needed(messages, max_tokens)
    if needed > limit:
        error = ContextWindowExceeded(
            f"The prompt needs about {needed:,} tokens of context; OLLAMA_NUM_CTX_MAX is {limit:,}.",
            backend=backend,
        )
        error.reply_tokens = max_tokens
        raise error
    step = MIN_NUM_CTX
    while step < needed:
        step *= 2
    # A limit between two steps is itself the last step.
    return min(step, limit)
