"""Finding earlier exchanges by what they mean, not only by the words they share.

A question is often asked in other words than the fact was told ("what do I
type to get online at the lake house?" for "the wifi password at the cabin
is ..."): the full-text index (``sessions_app.search``) cannot see that. Each
episode also gets vectors from a small sentence encoder
(``sessions_app.semantic.encoder``): the whole exchange's and its passages'
(``sessions_app.semantic.passages``), written by a task after the episode
(``embed_pending``); ``closeness`` says how close to a question's vector
each of the session's newest ``CONTEXT_SEMANTIC_CANDIDATES`` is, on a scale
that means the same in every session, and ``Closeness.nearest`` picks the closest.
``CONTEXT_SEMANTIC_CANDIDATES = 0`` turns this off: no vectors are written and
retrieval is full-text alone.
"""

from __future__ import annotations

from django.conf import settings

from sessions_app.semantic.neighbours import (
    Closeness,
    Neighbour,
    closeness,
    forget,
    question_vector,
    question_vector_soon,
)
from sessions_app.semantic.store import embed_pending, encode_again

__all__ = [
    "Closeness",
    "Neighbour",
    "closeness",
    "embed_pending",
    "enabled",
    "encode_again",
    "forget",
    "question_vector",
    "question_vector_soon",
]


def enabled() -> bool:
    return settings.CONTEXT_SEMANTIC_CANDIDATES > 0
