"""Messages that need no memory: thanks, greetings, acknowledgements, goodbyes.

"Thanks!" put to a session finds the exchanges that thank or say good
night just as surely as a question finds its answer: by words and by
meaning, such a message sits as close to the chat's own small talk as a
question asked in other words sits to its answer (bench/relevance_evidence.py),
so no floor on that evidence tells them apart. What does is the message
itself, on a scale that is the same in every session: how close its
vector is to the commonest things people say that ask for nothing. A
message that close retrieves nothing and gets no summaries: its context
is the recent window.
"""

from __future__ import annotations

import threading

import numpy as np

from sessions_app.semantic.encoder import encoder

#: What people say that asks for nothing earlier: a message this close to
#: one of them (cosine) needs no memory. Questions of the recall benchmark
#: come no closer than 0.36, small talk 0.45 to 1.0 (bench/README.md).
SIMILARITY = 0.5
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
)

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
    if len(message.split()) > MAX_WORDS:
        return False
    return float(np.max(_phrases() @ vector.astype(np.float32))) >= SIMILARITY
