"""Messages that need no memory: thanks, greetings, acknowledgements, goodbyes.

"Thanks!" put to a session finds the exchanges that thank or say good
night just as surely as a question finds its answer: by words and by
meaning, such a message sits as close to the chat's own small talk as a
question asked in other words sits to its answer (bench/relevance_evidence.py),
so no floor on that evidence tells them apart. What does is the message
itself, on a scale that is the same in every session: how close its
vector is to the commonest things people say that ask for nothing, by
kind (thanks, agreement, praise, apology, greeting, goodbye, laughter). A
message that close retrieves nothing and gets no summaries: its context
is the recent window.

A message that asks (a question mark, or an opening word that asks: "which
port?", "and the deadline?") must come closer than one that asks nothing
("appreciate it!", "fair enough"): a short real question costs an answer
when it is taken for small talk, small talk taken for a question only
tokens. Measured on messages written apart from the phrases
(bench/small_talk_probe.py, bench/README.md).
"""

from __future__ import annotations

import re
import threading

import numpy as np

from sessions_app.semantic.encoder import encoder

#: What people say that asks for nothing earlier: a message that asks and
#: comes this close to one of them (cosine) needs no memory. Questions of
#: the recall benchmark come no closer than 0.36, those of the probe 0.38,
#: small talk 0.45 to 1.0 (bench/README.md).
SIMILARITY = 0.5
#: ... and a message that asks nothing, this close. Short requests that do
#: need memory ("remind me of the port") come no closer than 0.37.
STATEMENT_SIMILARITY = 0.45
#: Opening words that make a message a question.
ASKING = frozenset(
    (
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "have",
        "has",
        "had",
        "am",
    )
)
#: Longer messages carry a request whatever their opening.
MAX_WORDS = 6
PHRASES = (
    "thanks",
    "thank you very much",
    "ok",
    "okay, got it",
    "yes",
    "no",
    "sure",
    "cool",
    "nice",
    "great",
    "perfect",
    "awesome",
    "sounds good",
    "hello",
    "hi there",
    "good morning",
    "good evening",
    "good night",
    "bye",
    "goodbye",
    "see you later",
    "talk to you later",
    "have a nice day",
    "that helps",
    "it works now",
    "haha",
    "never mind",
    "sorry",
    "you're welcome",
    "no problem",
    "I see",
    "understood",
    "agreed",
    "exactly",
    "right",
    "well done",
    "excellent",
    "how are you",
    "wait a moment",
)

_WORD = re.compile(r"[a-z]+")
_vectors: np.ndarray | None = None
_lock = threading.Lock()


def _phrases() -> np.ndarray:
    global _vectors
    with _lock:
        if _vectors is None:
            _vectors = encoder().encode(list(PHRASES)).astype(np.float32)
        return _vectors


def is_small_talk(message: str, vector: np.ndarray) -> bool:
    """Whether ``message``, encoded as ``vector``, needs no memory (module docstring)."""
    words = message.split()
    if len(words) > MAX_WORDS:
        return False
    closest = float(np.max(_phrases() @ vector.astype(np.float32)))
    return closest >= (SIMILARITY if asks(message) else STATEMENT_SIMILARITY)


def asks(message: str) -> bool:
    """Whether ``message`` is put as a question: a question mark, or an opening word that asks."""
    if "?" in message:
        return True
    first = _WORD.match(message.strip().lower())
    return first is not None and first.group(0) in ASKING
