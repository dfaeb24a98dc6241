"""How a retrieved exchange is quoted: in full when it is short, by the
passages of it that matter for the question when it is longer than
``CONTEXT_PASSAGE_TOKENS`` (``sessions_app.excerpts``), at most that many
tokens of them, so one long exchange wanted for a sentence leaves room for
others."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings

from sessions_app.excerpts import Text, best_passages
from sessions_app.tokens import count_tokens
from summaries.context.layout import Exchange, format_quoted, format_retrieved

#: What the ``…`` marks and the joins between passages may add to a cut's tokens.
CUT_SLACK = 8


@dataclass(frozen=True, slots=True)
class Question:
    """What ranks the passages: the question's terms as the index holds them,
    and its vector, being encoded (None when retrieval by meaning is off);
    waited for only when an exchange is long."""

    terms: tuple[str, ...] = ()
    vector: Future[np.ndarray] | None = None


def quoted_tokens(token_count: int) -> int:
    """The most an exchange of ``token_count`` tokens costs quoted (its label aside)."""
    limit = settings.CONTEXT_PASSAGE_TOKENS
    return token_count if token_count <= limit else limit + CUT_SLACK


def quote(
    found: dict[int, tuple[Exchange, datetime]], question: Question
) -> tuple[dict[int, str], dict[int, list[list[int]]]]:
    """The text of each exchange in ``found`` as the context quotes it, and
    the passages (``[start, end]`` offsets into ``user_input + response``)
    of those quoted in part."""
    limit = settings.CONTEXT_PASSAGE_TOKENS
    texts = {pk: format_retrieved(*pair) for pk, pair in found.items()}
    long = [
        Text(pk, ex.user_input, ex.response)
        for pk, (ex, _) in found.items()
        if _longer_than(ex, limit)
    ]
    if not long:
        return texts, {}
    vector = question.vector.result() if question.vector is not None else None
    chosen = best_passages(texts=long, terms=question.terms, vector=vector, tokens=limit)
    spans: dict[int, list[list[int]]] = {}
    for pk, kept in chosen.items():
        exchange, created = found[pk]
        texts[pk] = format_quoted(exchange, created, kept)
        spans[pk] = [[start, end] for start, end in kept]
    return texts, spans


def _longer_than(exchange: Exchange, limit: int) -> bool:
    # Characters first: a text of fewer characters than the limit has fewer tokens.
    size = len(exchange.user_input) + len(exchange.response)
    return size > limit and count_tokens(exchange.user_input) + count_tokens(exchange.response) > limit
