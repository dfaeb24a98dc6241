"""The passages of a long exchange that matter for a question.

A retrieved exchange of a thousand tokens is usually wanted for a sentence
or two. Each side is cut into passages (``semantic.passages.passage_spans``:
the runs of whole sentences its vectors were made from) and each passage is
scored for the question by its words, as the index matches them (the
database marks them, stemming included: ``search.snippets``), rarer within
the exchange weighing more, and by its meaning when a stored vector of it
exists (cosine to the question's vector, against the exchange's mean; each
stored passage vector carries its passage's span). The best are kept up
to a number of tokens, and given back in their order (``best_passages``).

For ranking passages across exchanges, ``passage_evidence`` gives each
passage's evidence on absolute scales instead: the weight (session idf)
of the question's terms it holds, and its own cosine to the question
(``summaries.context.selection`` ranks and chooses them).

What the user said counts, since the facts asked about later are mostly
the user's own: a short message is kept whole, and a long one's best
passage is kept first when it shares a word with the question.

Cost: one query for the marked words and one for the stored vectors of the
exchanges asked about (those a context ranked, a bounded number) that
retrieval did not read already; nothing is encoded.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sessions_app.search.database import episode_backend
from sessions_app.search.snippets import marker_pair, parse_marked
from sessions_app.semantic.passage_rows import PassageRows
from sessions_app.semantic.passages import TEXT_CHARACTERS, joined, older_layout, passage_spans
from sessions_app.semantic.vectors import StoredPassages
from sessions_app.tokens import count_tokens

__all__ = ["MEANING_WEIGHT", "Evidence", "Text", "best_passages", "matched_words", "passage_evidence"]

#: What a passage's closeness to the question counts for, per unit of
#: cosine above the exchange's mean, against the words' score (one word
#: found in one passage of ten scores about 2.4).
MEANING_WEIGHT = 10.0
#: Exchange texts whose passages are kept cut in this process (a few MB).
CACHED_TEXTS = 2048
#: Passages start within this many characters of their side to have a vector
#: (``semantic.passages`` encodes no further).
ENCODED_CHARACTERS = 2 * TEXT_CHARACTERS
#: A user's message that costs at most this share of the tokens a cut may
#: keep is kept whole; the rest goes to the reply's best passages.
USER_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Text:
    id: int
    user_input: str
    response: str


def best_passages(
    *,
    texts: Sequence[Text],
    terms: Sequence[str],
    vector: np.ndarray | None,
    tokens: int,
) -> dict[int, list[tuple[int, int]]]:
    """For each exchange, the ``[start, end)`` character offsets (into
    ``user_input + response``, as the snippets count them) of the passages
    kept, at most ``tokens`` tokens of them, in their order; adjacent
    passages are joined into one span, and a passage never spans both sides.
    ``terms``: the question's terms as the index holds them; ``vector``: the
    question's (None: words alone)."""
    if not texts:
        return {}
    matched = _matched_words(texts, list(terms))
    stored = _stored_vectors([text.id for text in texts]) if vector is not None else {}
    chosen = {}
    for text in texts:
        candidates = _candidates(text, matched.get(text.id, ([], [])))
        meaning = _meaning(text, candidates, stored.get(text.id), vector)
        chosen[text.id] = _choose(candidates, meaning, tokens)
    return chosen


@dataclass(slots=True)
class _Passage:
    side: int  # 0: the user's, 1: the response
    start: int  # offsets into user_input + response
    end: int
    own_start: int  # offsets into its side's text
    own_end: int
    words: frozenset[str]
    tokens: int
    score: float = 0.0


def _matched_words(texts: Sequence[Text], terms: list[str]) -> dict[int, tuple[list, list]]:
    """Episode id -> for each side, the ``(start, end, word)`` of the words the index matched."""
    if not terms:
        return {}
    start, stop = marker_pair([side for text in texts for side in (text.user_input, text.response)])
    marked = episode_backend().marked([text.id for text in texts], terms, start=start, stop=stop)
    return matched_words(marked, start, stop)


def matched_words(
    marked: Mapping[int, tuple[str, str]], start: str, stop: str
) -> dict[int, tuple[list, list]]:
    """``_matched_words`` of texts the index marked (``Backend.marked``) with ``start`` and ``stop``."""
    found = {}
    for pk, sides in marked.items():
        per_side = []
        for side in sides:
            plain, spans = parse_marked(side, start, stop)
            per_side.append([(s, e, plain[s:e].lower()) for s, e in spans])
        found[pk] = (per_side[0], per_side[1])
    return found


def _stored_vectors(ids: list[int], rows: PassageRows | None = None) -> dict[int, StoredPassages]:
    """The episodes' stored vectors: from ``rows`` where they were read, the rest in one query."""
    rest = [pk for pk in ids if rows is None or pk not in rows.ids]
    read = [rows] if rows is not None else []
    if rest:
        read.append(PassageRows.read(rest, None))
    return {pk: stored for source in read for pk in ids if (stored := source.stored(pk)) is not None}


def _candidates(text: Text, matched: tuple[list, list], *, tokens: int | None = None) -> list[_Passage]:
    """Each side's passages with the matched words each holds. ``tokens``:
    the exchange's token count, shared among its passages by their length
    instead of counting each (an estimate, for ranking many exchanges)."""
    found = []
    shift = len(text.user_input)
    characters = max(len(text.user_input) + len(text.response), 1)
    for side, (own, words) in enumerate(zip((text.user_input, text.response), matched, strict=True)):
        ordered = sorted(words)
        at = 0
        for start, end in _spans(own):
            # Words come in order of their place: skip those before the passage, take those inside.
            while at < len(ordered) and ordered[at][0] < start:
                at += 1
            held = []
            while at < len(ordered) and ordered[at][1] <= end:
                held.append(ordered[at][2])
                at += 1
            if tokens is None:
                size = count_tokens(own[start:end])
            else:
                size = max(1, tokens * (end - start) // characters)
            offset = shift * side
            found.append(_Passage(side, start + offset, end + offset, start, end, frozenset(held), size))
    # Rarer within the exchange weighs more (BM25's idf, the passages as the documents).
    frequency: dict[str, int] = {}
    for passage in found:
        for word in passage.words:
            frequency[word] = frequency.get(word, 0) + 1
    for passage in found:
        passage.score = sum(math.log(1 + len(found) / frequency[w]) for w in passage.words)
    return found


def _meaning(
    text: Text, candidates: list[_Passage], stored: StoredPassages | None, vector: np.ndarray | None
) -> list[float]:
    """Each candidate's closeness to the question above the exchange's mean;
    0 for a passage without a stored vector (past the tokens an episode's
    passages are encoded for, or not encoded yet)."""
    if stored is None or vector is None or not len(stored.vectors):
        return [0.0] * len(candidates)
    closeness = stored.vectors @ vector.astype(np.float32)
    if stored.spans is not None:
        rows = {(int(start), int(end)): i for i, (start, end) in enumerate(stored.spans.tolist())}
        found = [rows.get((p.start, p.end)) for p in candidates]
    else:
        # A row of the older layout: its passages are known by their text.
        texts = {
            passage: i - 1 for i, passage in enumerate(older_layout(text.user_input, text.response)) if i
        }
        sides = (text.user_input, text.response)
        found = [texts.get(joined(sides[p.side][p.own_start : p.own_end])) for p in candidates]
    known = [float(closeness[i]) for i in found if i is not None and i < len(closeness)]
    mean = sum(known) / len(known) if known else 0.0
    return [float(closeness[i]) - mean if i is not None and i < len(closeness) else 0.0 for i in found]


def _rows(text: Text, candidates: list[_Passage], stored: StoredPassages) -> list[int | None]:
    """Each candidate's row among the episode's stored passage vectors
    (None: not encoded): by its span, or for a row of the older layout by
    its text (kept for the exchanges asked about again)."""
    if stored.spans is not None:
        rows = {(int(start), int(end)): i for i, (start, end) in enumerate(stored.spans.tolist())}
        return [rows.get((p.start, p.end)) for p in candidates]
    spans = tuple((p.side, p.own_start, p.own_end) for p in candidates)
    return list(_older_rows(text.user_input, text.response, spans))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _older_rows(
    user_input: str, response: str, spans: tuple[tuple[int, int, int], ...]
) -> tuple[int | None, ...]:
    texts = {passage: i - 1 for i, passage in enumerate(older_layout(user_input, response)) if i}
    sides = (user_input, response)
    return tuple(
        texts.get(joined(sides[side][start:end])) if start < ENCODED_CHARACTERS else None
        for side, start, end in spans
    )


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(passage_spans(text))


def _choose(candidates: list[_Passage], meaning: list[float], tokens: int) -> list[tuple[int, int]]:
    scores = [p.score + MEANING_WEIGHT * m for p, m in zip(candidates, meaning, strict=True)]
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i), default=0)
    # Ties (no word, no vector) go to the passages nearest the best: its context.
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], abs(i - best), i))
    users = [i for i in order if candidates[i].side == 0]
    if sum(candidates[i].tokens for i in users) <= tokens * USER_SHARE:
        # A short message is kept whole: what the user said is what is asked about later.
        order = users + [i for i in order if candidates[i].side == 1]
    elif users and candidates[users[0]].words:
        # The user's best passage first when it shares a word with the question.
        order.remove(users[0])
        order.insert(0, users[0])
    kept: list[int] = []
    room = tokens
    for i in order:
        if candidates[i].tokens <= room:
            kept.append(i)
            room -= candidates[i].tokens
    kept.sort()
    spans: list[tuple[int, int]] = []
    last = -2
    for i in kept:
        passage = candidates[i]
        if spans and i == last + 1 and candidates[last].side == passage.side:
            spans[-1] = (spans[-1][0], passage.end)
        else:
            spans.append((passage.start, passage.end))
        last = i
    return spans


# --- evidence for ranking passages across exchanges -------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """One passage of a ranked exchange and what speaks for it, on scales
    that mean the same in every session: ``words``, the weight (BM25's idf
    in the session, ``search.Ranking.idf``) of the question's terms it
    holds; ``closeness``, the cosine of its stored vector to the question's
    (None when it has none)."""

    episode_id: int
    order: int  # its place among the exchange's passages
    side: int  # 0: the user's, 1: the response
    start: int  # offsets into user_input + response
    end: int
    tokens: int
    words: float
    closeness: float | None
    #: The whole exchange's vector's cosine to the question (None: not encoded).
    exchange_closeness: float | None = None


def passage_evidence(
    *,
    texts: Sequence[Text],
    terms: Sequence[str],
    idf: dict[str, float],
    vector: np.ndarray | None,
    sizes: dict[int, int],
    rows: PassageRows | None = None,
    matched: Mapping[int, tuple[list, list]] | None = None,
) -> dict[int, list[Evidence]]:
    """Each exchange's passages (``_candidates``) with their evidence for
    the question; ``sizes``: each exchange's token count, which its
    passages' are estimated from; ``rows``: stored rows retrieval already
    read (``semantic.PassageRows``); ``matched``: the words the index marked
    in them, read with their texts (``matched_words``). Cost: one query for
    the marked words (none given ``matched``) and one for the stored rows
    not in ``rows``, for the exchanges given (a bounded number of ranked candidates)."""
    if not texts:
        return {}
    matched = _matched_words(texts, list(terms)) if matched is None else matched
    stored = _stored_vectors([text.id for text in texts], rows) if vector is not None else {}
    term_of = functools.lru_cache(maxsize=None)(functools.partial(_term_of, terms=tuple(terms)))
    found: dict[int, list[Evidence]] = {}
    for text in texts:
        candidates = _candidates(text, matched.get(text.id, ([], [])), tokens=sizes.get(text.id))
        closeness = _closeness(text, candidates, stored.get(text.id), vector)
        vectors = stored.get(text.id)
        known = vectors is not None and vector is not None
        whole = float(vectors.whole @ vector.astype(np.float32)) if known else None
        found[text.id] = [
            Evidence(
                text.id,
                n,
                passage.side,
                passage.start,
                passage.end,
                passage.tokens,
                sum(idf.get(term, 0.0) for term in {term_of(word) for word in passage.words}),
                close,
                whole,
            )
            for n, (passage, close) in enumerate(zip(candidates, closeness, strict=True))
        ]
    return found


def _term_of(word: str, terms: Sequence[str]) -> str:
    """The question's term a word the index matched stands for: the one
    sharing its longest beginning (a stem and its forms, "deploy" and
    "deployed"; on SQLite the question's words themselves)."""

    def shared(term: str) -> tuple[int, int]:
        n = 0
        for a, b in zip(word, term):
            if a != b:
                break
            n += 1
        return n, -abs(len(term) - len(word))

    return max(terms, key=shared, default=word)


def _closeness(
    text: Text, candidates: list[_Passage], stored: StoredPassages | None, vector: np.ndarray | None
) -> list[float | None]:
    """Each candidate's cosine to the question; None for one without a stored vector."""
    if stored is None or vector is None or not len(stored.vectors):
        return [None] * len(candidates)
    closeness = stored.vectors @ vector.astype(np.float32)
    return [
        float(closeness[i]) if i is not None and i < len(closeness) else None
        for i in _rows(text, candidates, stored)
    ]
