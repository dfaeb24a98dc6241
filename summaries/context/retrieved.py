"""The retrieved part of a context: the passages of the ranked exchanges
that the budget quotes (``summaries.context.selection``), written under
their labels, and whether the question needs any memory at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sessions_app import semantic
from sessions_app.excerpts import Text, passage_evidence
from sessions_app.retrieval import PendingRanking, meaning_text
from sessions_app.search import Hit
from sessions_app.semantic import small_talk
from sessions_app.tokens import count_tokens
from summaries.context import sources
from summaries.context.budget import Piece
from summaries.context.layout import Exchange, format_quoted, format_retrieved
from summaries.context.selection import select


def needs_no_memory(question: str, pending: PendingRanking) -> bool:
    """Whether the question is small talk, by the vector retrieval encoded
    (the question's own when retrieval compared less of it)."""
    if pending.vector is None:
        return False
    if meaning_text(question, pending.ranking) == question:
        vector = pending.vector.result()
    elif len(question.split()) <= small_talk.MAX_WORDS:
        vector = semantic.question_vector(question)
    else:
        return False
    return small_talk.is_small_talk(question, vector)


@dataclass(slots=True)
class Chosen:
    """The ranked exchanges read (with their dates), the passages of those
    quoted in part, and the ranked ids under and over the floor, in rank order."""

    texts: dict[int, tuple[Exchange, datetime]] = field(default_factory=dict)
    spans: dict[int, list[list[int]]] = field(default_factory=dict)
    below_floor: list[int] = field(default_factory=list)
    above_floor: list[int] = field(default_factory=list)


def retrieved_pieces(
    session_pk: int, hits: list[Hit], pending: PendingRanking, room: int, label_tokens: int
) -> tuple[list[Piece], Chosen]:
    """The retrieved exchanges' pieces, best first, with their texts
    (whole, or by the passages ``selection.select`` chose), and what was
    chosen. Reads the ranked exchanges (as many as ``retrieval_depth``
    ranked: bounded) in one query, their marked words and stored vectors in two."""
    chosen = Chosen()
    if not hits:
        return [], chosen
    chosen.texts = sources.episode_texts(session_pk, [hit.episode_id for hit in hits])
    ranking = pending.ranking
    evidence = passage_evidence(
        texts=[Text(pk, ex.user_input, ex.response) for pk, (ex, _) in chosen.texts.items()],
        terms=tuple(ranking.terms) if ranking else (),
        idf=ranking.idf if ranking else {},
        vector=pending.vector.result() if pending.vector is not None else None,
        sizes={hit.episode_id: hit.token_count for hit in hits},
    )
    # Gone since it was ranked: nothing to quote.
    ranked = [hit.episode_id for hit in hits if hit.episode_id in chosen.texts]
    sizes = {hit.episode_id: hit.token_count for hit in hits}
    picked = select(ranked=ranked, evidence=evidence, sizes=sizes, room=room, label_tokens=label_tokens)
    chosen.below_floor, chosen.above_floor = picked.below_floor, picked.above_floor
    pieces = []
    for quote in [*picked.quotes, *picked.spare]:
        exchange, created = chosen.texts[quote.episode_id]
        if quote.whole:
            text = format_retrieved(exchange, created)
        else:
            text = format_quoted(exchange, created, quote.spans)
            chosen.spans[quote.episode_id] = [[start, end] for start, end in quote.spans]
        pieces.append(Piece("retrieved", quote.episode_id, text, count_tokens(text) + 1))
    return pieces, chosen
