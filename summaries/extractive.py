"""The offline backend's summary: whole sentences quoted from the exchanges, chosen to cover them.

No model writes it, so it says nothing in words of its own. The exchanges
are cut into as many consecutive parts as the token cap allows (one per
exchange when they fit), and from each part, in order, it quotes the most
central sentence of the user's messages and of the replies: the one nearest
the part's centroid, by the sentence encoder when retrieval by meaning is on
(``sessions_app.semantic``; at most ``ENCODED_SENTENCES`` a call, a few
milliseconds each), else by the words they share, rare words weighing more.
So every part of the range is quoted, not its first few topics.

An update (previous summary and new exchanges) keeps the previous summary's
sentences while the cap allows; past it, the new exchanges get their share
(by how many exchanges each side stands for) and the previous sentences are
thinned evenly, first and last kept, so the beginning stays covered too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from sessions_app import semantic
from sessions_app.semantic.encoder import encoder
from sessions_app.tokens import count_tokens
from summaries.digest import FALLBACK
from summaries.sentences import closeness_terms, sentences, word_count

__all__ = ["REPLY_LEAD", "USER_LEAD", "Quoted", "extractive_summary", "parse_summary"]

USER_LEAD = "The user wrote: "
REPLY_LEAD = "The assistant wrote: "
#: Sentences encoded per call at most (the encoder takes about 6 ms a short
#: sentence on one core); a pass with more is compared by its words.
ENCODED_SENTENCES = 32
#: Sentences quoted are this long: a shorter one ("Thanks!", "Sure.") says
#: nothing of the conversation, and a longer one would be cut or take the
#: whole cap (whole sentences only).
MIN_WORDS = 3
MAX_WORDS = 60


@dataclass(slots=True)
class Quoted:
    """What a summary quotes: sentences of unknown side (a previous summary
    not written here), of the user's messages and of the replies, each in order."""

    other: list[str] = field(default_factory=list)
    user: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [" ".join(self.other)] if self.other else []
        if self.user:
            lines.append(USER_LEAD + " ".join(self.user))
        if self.replies:
            lines.append(REPLY_LEAD + " ".join(self.replies))
        return "\n".join(lines)

    def then(self, later: Quoted) -> Quoted:
        return Quoted(self.other + later.other, self.user + later.user, self.replies + later.replies)

    def casefolded(self) -> set[str]:
        return {s.casefold() for s in [*self.other, *self.user, *self.replies]}

    @property
    def exchanges(self) -> int:
        """How many exchanges it stands for, about: one per user sentence (or reply)."""
        return len(self.other) + max(len(self.user), len(self.replies))


@dataclass(frozen=True, slots=True)
class _Part:
    """The sentences one exchange may be quoted by, of each side."""

    user: list[str]
    replies: list[str]


def extractive_summary(
    exchanges: Sequence[tuple[str, str]],
    *,
    previous: str | None = None,
    max_tokens: int,
    drop: Callable[[str], bool] = lambda sentence: False,
) -> str:
    """The summary of ``(user_input, response)`` pairs, oldest first, within
    ``max_tokens``; with ``previous``, the update of that summary. Sentences
    for which ``drop`` is true are never quoted (an empty response quotes
    nothing). Never empty: with nothing to quote, the previous summary or
    the digest's fallback line."""
    earlier = parse_summary(previous, drop=drop) if previous else Quoted()
    known = earlier.casefolded()
    new = _Pass([_Part(_quotable(u, drop), _quotable(r, drop)) for u, r in exchanges])
    quoted = new.choose(max_tokens, known)
    if _fits(earlier.then(quoted), max_tokens):
        summary = earlier.then(quoted)
    else:
        share = len(new.parts) / (len(new.parts) + earlier.exchanges)
        # The first and last sentences of each side of the earlier part always stay.
        room = max(max_tokens - _tokens(_thinned(earlier, 2)), max_tokens // 2)
        quoted = new.at_least(math.ceil(max_tokens * share), room, known)
        summary = _fitted(earlier, max_tokens, followed_by=quoted).then(quoted)
    text = summary.render()
    if text:
        return text
    return (previous or "").strip() or FALLBACK


def parse_summary(text: str, *, drop: Callable[[str], bool] = lambda sentence: False) -> Quoted:
    """A summary's sentences by side: the lines written here start with their
    side's lead; any other text (a model's summary, a curated one) is ``other``."""
    quoted = Quoted()
    for line in text.splitlines():
        if line.startswith(USER_LEAD):
            side, line = quoted.user, line[len(USER_LEAD) :]
        elif line.startswith(REPLY_LEAD):
            side, line = quoted.replies, line[len(REPLY_LEAD) :]
        else:
            side = quoted.other
        side.extend(s for s in sentences(line) if not drop(s))
    return quoted


def _quotable(text: str, drop: Callable[[str], bool]) -> list[str]:
    return [s for s in sentences(text) if MIN_WORDS <= word_count(s) <= MAX_WORDS and not drop(s)]


class _Pass:
    """The exchanges of one call, their sentences compared once."""

    def __init__(self, parts: list[_Part]) -> None:
        self.parts = parts
        texts = list(dict.fromkeys(s for part in parts for s in [*part.user, *part.replies]))
        self.rows = {text: row for row, text in enumerate(texts)}
        self.vectors = _vectors(texts)

    def choose(self, cap: int, known: set[str]) -> Quoted:
        """The most groups of parts whose central sentences fit ``cap`` (fewer,
        larger groups when they do not); one user sentence as a last resort."""
        for count in range(len(self.parts), 0, -1):
            quoted = self.central(count, known)
            if _fits(quoted, cap):
                return quoted
        alone = Quoted(user=self.central(1, known).user)
        return alone if _fits(alone, cap) else Quoted()

    def at_least(self, share: int, cap: int, known: set[str]) -> Quoted:
        """The fewest groups whose central sentences take ``share`` tokens or
        more (all of them if none do), within ``cap``."""
        chosen = Quoted()
        for count in range(1, len(self.parts) + 1):
            quoted = self.central(count, known)
            if not _fits(quoted, cap):
                break
            chosen = quoted
            if _tokens(quoted) >= share:
                break
        return chosen

    def central(self, count: int, known: set[str]) -> Quoted:
        """From each of ``count`` consecutive groups of parts, its most central
        user sentence and reply sentence, leaving out what is quoted already."""
        quoted = Quoted()
        seen = set(known)
        for group in _groups(self.parts, count):
            for pool, chosen in (
                ([s for part in group for s in part.user], quoted.user),
                ([s for part in group for s in part.replies], quoted.replies),
            ):
                best = self.most_central(pool, seen)
                if best is not None:
                    chosen.append(best)
                    seen.add(best.casefold())
        return quoted

    def most_central(self, pool: list[str], seen: set[str]) -> str | None:
        """The sentence of ``pool`` nearest its centroid, of those not ``seen``;
        of equally near ones (two sentences always are), the one with the
        most words that say something, then the earliest."""
        fresh = [s for s in pool if s.casefold() not in seen]
        if not fresh:
            return None
        centroid = self.vectors[[self.rows[s] for s in pool]].mean(axis=0)
        scores = np.round(self.vectors[[self.rows[s] for s in fresh]] @ centroid, 4)
        best = max(range(len(fresh)), key=lambda n: (scores[n], len(set(closeness_terms(fresh[n]))), -n))
        return fresh[best]


def _vectors(texts: list[str]) -> np.ndarray:
    """Unit vectors, one row per text."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    if semantic.enabled() and len(texts) <= ENCODED_SENTENCES:
        return encoder().encode(texts)
    return _word_vectors(texts)


def _word_vectors(texts: list[str]) -> np.ndarray:
    """Each text's words weighted by their rarity among ``texts`` (tf-idf), as unit rows."""
    counts = [Counter(closeness_terms(text)) for text in texts]
    held = Counter(term for count in counts for term in count)
    index = {term: n for n, term in enumerate(held)}
    matrix = np.zeros((len(texts), max(len(index), 1)), dtype=np.float32)
    for row, count in enumerate(counts):
        for term, times in count.items():
            matrix[row, index[term]] = times * (math.log((1 + len(texts)) / (1 + held[term])) + 1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def _groups(parts: list[_Part], count: int) -> Iterable[list[_Part]]:
    """``parts`` in ``count`` consecutive groups of nearly equal size."""
    bounds = [round(n * len(parts) / count) for n in range(count + 1)]
    return (parts[start:end] for start, end in pairwise(bounds) if end > start)


def _fitted(quoted: Quoted, cap: int, *, followed_by: Quoted) -> Quoted:
    """As many of ``quoted``'s sentences as fit ``cap`` with ``followed_by``
    quoted after them, evenly spaced along each side."""
    for keep in range(max(len(quoted.other), len(quoted.user), len(quoted.replies)), 0, -1):
        thinned = _thinned(quoted, keep)
        if _fits(thinned.then(followed_by), cap):
            return thinned
    return Quoted()


def _thinned(quoted: Quoted, keep: int) -> Quoted:
    """At most ``keep`` sentences of each side, evenly spaced, its first and last among them."""
    return Quoted(_evenly(quoted.other, keep), _evenly(quoted.user, keep), _evenly(quoted.replies, keep))


def _evenly(items: list[str], keep: int) -> list[str]:
    if len(items) <= keep:
        return list(items)
    if keep == 1:
        return items[:1]
    return [items[round(n * (len(items) - 1) / (keep - 1))] for n in range(keep)]


def _tokens(quoted: Quoted) -> int:
    return count_tokens(quoted.render())


def _fits(quoted: Quoted, cap: int) -> bool:
    return _tokens(quoted) <= cap
