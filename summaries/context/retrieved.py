"""The retrieved part of a context: the passages of the ranked exchanges
that the budget quotes (``summaries.context.selection``), written under
their labels, and whether the question needs any memory at all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from sessions_app import relevance, semantic, shared_memory
from sessions_app.excerpts import Text, passage_evidence
from sessions_app.retrieval import PendingRanking, meaning_text
from sessions_app.search import Hit
from sessions_app.semantic import small_talk
from sessions_app.tokens import count_tokens
from summaries.context import sources
from summaries.context.budget import Piece
from summaries.context.layout import Exchange, format_quoted, format_retrieved
from summaries.context.selection import passage_keys, select, text_keys

if TYPE_CHECKING:
    from summaries.context.lent import Borrowed

#: Cosine a bound is raised by before it is compared with the floor.
MARGIN = 1e-4


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


def cannot_clear(hits: list[Hit], pending: PendingRanking) -> set[int]:
    """The ranked exchanges none of whose passages can clear
    ``CONTEXT_RELEVANCE_FLOOR``, told without reading them: the evidence of
    a passage (``sessions_app.relevance``) is at most the highest cosine of
    any of its exchange's stored vectors (retrieval compared them: ``rows``)
    plus the weight of every term of the question the exchange may hold
    (``Ranking.most_weight``). An exchange whose rows retrieval did not read
    is not judged here."""
    closeness = pending.closeness
    if closeness is None or pending.vector is None:
        return set()
    floor = settings.CONTEXT_RELEVANCE_FLOOR
    ranking = pending.ranking
    hopeless = set()
    for hit in hits:
        best = closeness.rows.best_cosine(hit.episode_id)
        if best is None:
            continue
        words = ranking.most_weight(hit.episode_id) if ranking is not None else 0.0
        # The margin covers the rounding of a cosine computed in another product.
        if relevance.of(max(best, relevance.UNKNOWN_CLOSENESS), words) + MARGIN < floor:
            hopeless.add(hit.episode_id)
    return hopeless


@dataclass(slots=True)
class Chosen:
    """The ranked exchanges read (with their dates), the passages of those
    quoted in part, and the ranked ids under and over the floor, in rank
    order; ``lent``: those of the person's other chats -> their session's uuid."""

    texts: dict[int, tuple[Exchange, datetime]] = field(default_factory=dict)
    spans: dict[int, list[list[int]]] = field(default_factory=dict)
    below_floor: list[int] = field(default_factory=list)
    above_floor: list[int] = field(default_factory=list)
    lent: dict[int, str] = field(default_factory=dict)


def retrieved_pieces(
    session_pk: int,
    hits: list[Hit],
    pending: PendingRanking | None,
    room: int,
    label_tokens: int,
    lent: Borrowed | None = None,
    recent: Iterable[Exchange] = (),
) -> tuple[list[Piece], Chosen]:
    """The retrieved exchanges' pieces, best first, with their texts
    (whole, or by the passages ``selection.select`` chose), and what was
    chosen. Reads the ranked exchanges that may clear the floor
    (``cannot_clear``; as many as ``retrieval_depth`` ranked at most:
    bounded) with their marked words, in one query (``sources.quoted_texts``); their stored
    vectors are those retrieval read (another query only for any it did not);
    ``lent`` (a shared session's): the hits of the person's other chats
    among ``hits``, read in one more query (``sessions_app.shared_memory``);
    ``recent``: the window the context quotes (what it says is not quoted again)."""
    chosen = Chosen()
    if not hits:
        return [], chosen
    hopeless = cannot_clear(hits, pending) if pending is not None else set()
    lent_ids = set(lent.ranked.sessions) if lent else set()
    own_ids = [hit.episode_id for hit in hits if hit.episode_id not in lent_ids | hopeless]
    ranking = pending.ranking if pending is not None else None
    terms = tuple(ranking.terms) if ranking else ()
    chosen.texts, matched = sources.quoted_texts(session_pk, own_ids, terms)
    titles: dict[int, str] = {}
    if lent and lent_ids:
        for pk, (row, title, uuid) in shared_memory.lent_texts(lent.session, lent_ids).items():
            chosen.texts[pk] = (Exchange(pk, row.user_input, row.response, row.position), row.created_at)
            titles[pk], chosen.lent[pk] = title, uuid
    vector = pending.vector.result() if pending is not None and pending.vector is not None else None
    if vector is None and lent is not None:
        vector = lent.vector
    sizes = {hit.episode_id: hit.token_count for hit in hits}
    rows = pending.closeness.rows if pending is not None and pending.closeness is not None else None
    texts = {pk: Text(pk, ex.user_input, ex.response) for pk, (ex, _) in chosen.texts.items()}
    evidence = passage_evidence(
        texts=[text for pk, text in texts.items() if pk not in titles],
        terms=terms,
        idf=ranking.idf if ranking else {},
        vector=vector,
        sizes=sizes,
        rows=rows,
        matched=matched,
    )
    if titles and lent is not None:
        # Their words weigh as the person's chats weigh them, not as this one does.
        evidence |= passage_evidence(
            texts=[text for pk, text in texts.items() if pk in titles],
            terms=lent.ranked.terms,
            idf=lent.ranked.idf,
            vector=vector,
            sizes=sizes,
        )
    # Gone since it was ranked: nothing to quote. Those that cannot clear the
    # floor keep their place: a passage's score counts its exchange's rank.
    ranked = [hit.episode_id for hit in hits if hit.episode_id in chosen.texts or hit.episode_id in hopeless]
    picked = select(
        ranked=ranked,
        evidence=evidence,
        sizes=sizes,
        room=room,
        label_tokens=label_tokens,
        keys=passage_keys(texts, evidence),
        # What the recent window says is quoted already: an exchange that only repeats it adds nothing.
        said=text_keys(text for ex in recent for text in (ex.user_input, ex.response)),
    )
    below = hopeless | set(picked.below_floor)
    chosen.below_floor = [pk for pk in ranked if pk in below]
    chosen.above_floor = picked.above_floor
    pieces = []
    for quote in [*picked.quotes, *picked.spare]:
        exchange, created = chosen.texts[quote.episode_id]
        title = titles.get(quote.episode_id)
        if quote.whole:
            text = format_retrieved(exchange, created, title)
        else:
            text = format_quoted(exchange, created, quote.spans, title)
            chosen.spans[quote.episode_id] = [[start, end] for start, end in quote.spans]
        pieces.append(Piece("retrieved", quote.episode_id, text, count_tokens(text) + 1))
    return pieces, chosen
