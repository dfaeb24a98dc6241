"""Summary rows compete with the retrieved exchanges for the budget.

The budget takes retrieved exchanges first, then summary rows newest first
(``summaries.context``): a row that holds the answer is left out when the
exchanges fill the budget, though its sentence about it costs a fraction of
an exchange. So each row of the chain the context read (at most
``CONTEXT_MAX_SUMMARIES``) is compared with the question by passage, by its
words and its vectors (``summaries.summary_index``), and a row with a
passage that answers it is offered early, among the best retrieved
exchanges (at ``SUMMARY_RANK``), quoted by its passages that matter (at
most ``CONTEXT_PASSAGE_TOKENS`` of them, ``…`` for what is left out). A
row that does not answer is left out when retrieval quoted passages that
clear the floor (the budget is a cap: such a row only filled what the
passages left); when retrieval quoted nothing, the rows keep their place,
newest first, for they are then all the context knows of earlier.

A passage answers when it holds a word of the question that is rare in the
chain (``WORDS_FLOOR``) or stands close to it in meaning (``MEANING_FLOOR``):
evidence on absolute scales, so "Thanks!" lifts no row. Cost: one query for
the rows' indexes, no encoding. Measured by bench/memory_recall.py
(bench/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from sessions_app.semantic.vectors import to_matrix
from sessions_app.tokens import count_tokens
from summaries.context.budget import Piece
from summaries.context.layout import ELLIPSIS
from summaries.context.sources import SummaryPart
from summaries.models import SummaryIndex
from summaries.summary_index import digest_of, passages_of, terms, words_of

#: Where among the retrieved exchanges (their rank, 0 = before the best) a
#: row that answers the question is offered; None: rows keep their place.
SUMMARY_RANK: int | None = 1
#: A passage answers by its words when those of the question it holds weigh
#: this much (BM25's idf over the chain's passages: a word in one passage of
#: ten is about 2.4).
WORDS_FLOOR = 2.4
#: ... or by its meaning when its cosine to the question reaches this.
MEANING_FLOOR = 0.45
#: What a unit of cosine counts against a point of the words' score, ranking a row's passages.
MEANING_WEIGHT = 5.0
#: What a row that does not answer the question gets, when retrieval quoted
#: something that clears the floor: "whole" (it fills what the passages
#: leave, newest first), "passages" (its best passages that hold any of the
#: question, at most ``UNANSWERED_TOKENS``) or "none" (left out: the budget
#: is a cap). When retrieval quoted nothing, every row keeps its place whole.
#: "none" kept: no recall lower on any set, fewer tokens (bench/README.md).
UNANSWERED = "none"
UNANSWERED_TOKENS = 120


@dataclass(slots=True)
class _Passage:
    row: int
    start: int
    end: int
    words: frozenset[str]
    cosine: float | None
    score: float = 0.0
    answers: bool = False


def compete(
    pieces: Sequence[Piece], chain: Sequence[SummaryPart], question: str, vector: np.ndarray | None
) -> list[Piece]:
    """``pieces`` (retrieved exchanges by rank, summary rows newest first,
    the digest) with the rows that answer ``question`` quoted by their
    passages that do and offered at ``SUMMARY_RANK``, and the rows that do
    not as ``UNANSWERED`` says. (A share of the budget reserved for the
    newest row was measured and not kept: bench/README.md.)"""
    pieces = list(pieces)
    if not chain or SUMMARY_RANK is None:
        return pieces
    wanted = set(terms(question))
    passages = _passages(chain, wanted, vector) if wanted or vector is not None else []
    answering = {p.row for p in passages if p.answers}
    # Retrieval quoted nothing that clears the floor: the rows are what is left to say.
    retrieved = any(p.kind == "retrieved" for p in pieces)
    unanswered = UNANSWERED if retrieved else "whole"
    best = {row: max(p.score for p in passages if p.row == row) for row in answering}
    offered = []
    rest = []
    for piece in pieces:
        if piece.kind != "summary":
            rest.append(piece)
            continue
        own = [p for p in passages if p.row == piece.id]
        if piece.id in answering:
            content = next(part.content for part in chain if part.id == piece.id)
            offered.append((best[piece.id], quoted(piece, content, [p for p in own if p.answers]) or piece))
        elif unanswered == "whole":
            rest.append(piece)
        elif unanswered == "passages":
            content = next(part.content for part in chain if part.id == piece.id)
            cut = quoted(piece, content, [p for p in own if p.score > 0], limit=UNANSWERED_TOKENS)
            if cut is not None:
                rest.append(cut)
    at = min(SUMMARY_RANK, sum(1 for p in rest if p.kind == "retrieved"))
    early = [piece for _, piece in sorted(offered, key=lambda pair: -pair[0])]
    return rest[:at] + early + rest[at:]


def answering_passages(
    chain: Sequence[SummaryPart], question: str, vector: np.ndarray | None
) -> list[list[_Passage]]:
    """Each row's passages that answer ``question`` (none for a row that
    does not), judged as ``compete`` judges the context's own chain."""
    wanted = set(terms(question))
    passages = _passages(chain, wanted, vector) if wanted or vector is not None else []
    return [[p for p in passages if p.row == part.id and p.answers] for part in chain]


def _passages(chain: Sequence[SummaryPart], wanted: set[str], vector: np.ndarray | None) -> list[_Passage]:
    """Every passage of the chain, scored for the question; read from the
    rows' indexes where they match their rows' text (one query)."""
    indexes = {
        index.summary_id: index
        for index in SummaryIndex.objects.filter(summary_id__in=[part.id for part in chain]).only(
            "summary_id", "digest", "words", "vectors"
        )
    }
    found: list[_Passage] = []
    for part in chain:
        spans = passages_of(part.content)
        index = indexes.get(part.id)
        current = index is not None and index.digest == digest_of(part.content)
        words = index.words if current else words_of(part.content)
        cosines: list[float | None] = [None] * len(spans)
        if current and vector is not None and index.vectors:
            matrix, _ = to_matrix([bytes(index.vectors)])
            if len(matrix) == len(spans):
                cosines = [float(c) for c in matrix @ vector.astype(np.float32)]
        for (start, end), held, cosine in zip(spans, words, cosines, strict=False):
            found.append(_Passage(part.id, start, end, frozenset(held), cosine))
    frequency: dict[str, int] = {}
    for passage in found:
        for word in passage.words & wanted:
            frequency[word] = frequency.get(word, 0) + 1
    for passage in found:
        matched = sum(math.log(1 + len(found) / frequency[w]) for w in passage.words & wanted)
        meaning = passage.cosine if passage.cosine is not None else 0.0
        passage.score = matched + MEANING_WEIGHT * meaning
        passage.answers = matched >= WORDS_FLOOR or meaning >= MEANING_FLOOR
    return found


def quoted(piece: Piece, content: str, eligible: list[_Passage], limit: int | None = None) -> Piece | None:
    """The row by its ``eligible`` passages, best first up to ``limit``
    (``CONTEXT_PASSAGE_TOKENS``), given back in their order, under its date
    span; the whole row when it costs no more than ``limit``; None when
    none of them fits."""
    span = piece.text[: len(piece.text) - len(content)]
    limit = settings.CONTEXT_PASSAGE_TOKENS if limit is None else limit
    if piece.cost <= limit:
        return piece
    room, kept = limit, []
    for passage in sorted(eligible, key=lambda p: -p.score):
        tokens = count_tokens(content[passage.start : passage.end])
        if tokens <= room:
            kept.append(passage)
            room -= tokens
    if not kept:
        return None
    kept.sort(key=lambda p: p.start)
    parts = []
    last_end = 0
    for passage in kept:
        if content[last_end : passage.start].strip():
            parts.append(ELLIPSIS)
        parts.append(content[passage.start : passage.end])
        last_end = passage.end
    if content[last_end:].strip():
        parts.append(ELLIPSIS)
    text = span + " ".join(parts)
    return Piece(piece.kind, piece.id, text, count_tokens(text))
