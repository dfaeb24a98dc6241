"""Which passages of the ranked exchanges the context quotes: the best
passages across all of them, not the best exchanges each cut alike.

Retrieval ranks whole exchanges (``sessions_app.retrieval``); a question
about one sentence of a 1,000-token reply then competes with a 60-token
exchange that holds nothing. So the ranked exchanges (a bounded number of
them) are cut into passages (``sessions_app.excerpts.passage_evidence``),
each passage is scored on absolute evidence (``sessions_app.relevance``),
and the budget goes to the best passages wherever they are: a passage
that opens its exchange also pays for the exchange's label, so one
exchange that holds several good passages is cheaper than as many
exchanges. A short exchange is a unit whole; an exchange gives at most
``CONTEXT_PASSAGE_TOKENS`` of passages.

The budget is a cap, not a target: a passage whose evidence does not clear
``CONTEXT_RELEVANCE_FLOOR`` is never quoted, whatever room is left, and an
exchange none of whose passages clears it is listed as below the floor.
Nor does a passage count twice: one whose words the context already quotes
(the recent window, or a unit chosen before it: a greeting, a sign-off, a
sentence replies repeat) is no evidence again, and its unit is judged by
what else it says (``passage_keys``), under the floor when nothing else
clears it. And the room goes first to what comes within ``STRONG_GAP`` of
the question's best evidence: what is further below, and still clears the
floor, shares ``WEAK_SHARE`` of the room, so that a question one exchange
plainly answers does not fill the budget with exchanges that merely clear
the floor, while answers spread over weaker passages keep a part of it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from sessions_app import relevance
from sessions_app.excerpts import Evidence, Text
from sessions_app.semantic.passages import passage_spans

#: What the ``…`` before a passage and the join add to its tokens.
JOIN_TOKENS = 2
#: What the ``…`` marks may add to an exchange's cut beyond its passages.
CUT_SLACK = 8
#: A short message of the user's is quoted whole with a passage of its reply
#: when it costs at most this share of what an exchange may give: what the
#: user said is what is asked about later.
USER_SHARE = 0.5
#: Exchanges offered to the budget's exact count beyond those chosen.
SPARE = 6
#: What ranking first among the exchanges adds to a passage's score, and how
#: fast it falls with the exchange's rank (``PRIOR / (rank + PRIOR_RANKS)``
#: times ``PRIOR_RANKS``): the exchange's ranking knows what a passage alone
#: does not (the whole exchange's meaning, variety).
PRIOR = 0.3
PRIOR_RANKS = 10
#: What comes within this of the question's best evidence (on the cosine's
#: scale, ``sessions_app.relevance``) takes the room while it lasts; None:
#: everything that clears the floor does ...
STRONG_GAP: float | None = 0.3
#: ... and what is further below shares at most this part of the room.
#: Measured on the three sets of bench/memory_recall.py (bench/README.md):
#: a hard gap (no share) lost answers spread over passages well
#: below the best; a quarter keeps them on the dialogue set and costs the
#: assistant set two updated facts at 8,000 tokens.
WEAK_SHARE = 0.25

_WORD = re.compile(r"\w+")


@dataclass(slots=True)
class Quote:
    """What of one exchange is quoted: all of it, or its passages ``spans``."""

    episode_id: int
    whole: bool
    spans: list[tuple[int, int]] = field(default_factory=list)
    tokens: int = 0  # estimated, its label included
    score: float = 0.0  # its best passage's


@dataclass(slots=True)
class Selection:
    quotes: list[Quote]  # best first
    #: The next best exchanges that did not fit by the estimates, each by its
    #: best unit: the budget's exact count may still find room for them.
    spare: list[Quote]
    below_floor: list[int]  # ranked exchanges without a passage that clears the floor, in rank order
    above_floor: list[int]  # the others, in rank order


@dataclass(slots=True)
class _Unit:
    """What may be quoted: a short exchange whole, or one passage of a long
    one (with the user's short message)."""

    score: float  # its evidence with the rank's prior
    rank: int
    passages: list[Evidence]  # what it quotes
    whole_tokens: int  # its tokens when it is a whole exchange; 0 for a passage
    evidence: float  # its best passage's, among those not quoted already
    judged: list[tuple[str, float]]  # (key, evidence) of the passages it is judged by

    @property
    def episode_id(self) -> int:
        return self.passages[0].episode_id

    def fresh(self, quoted: set[str]) -> float:
        """Its best evidence in passages that say what nothing quoted says."""
        return max((score for key, score in self.judged if not key or key not in quoted), default=-1.0)


def select(
    *,
    ranked: Sequence[int],
    evidence: dict[int, list[Evidence]],
    sizes: dict[int, int],
    room: int,
    label_tokens: int,
    keys: Mapping[tuple[int, int], str] | None = None,
    said: Iterable[str] = (),
) -> Selection:
    """The passages to quote for ``room`` tokens from the exchanges
    ``ranked`` (best first) whose passages ``evidence`` holds; ``sizes``:
    each exchange's tokens whole; ``keys``: each passage's words
    (``passage_keys``; (episode id, order) -> key), two passages with the
    same key saying the same."""
    floor = settings.CONTEXT_RELEVANCE_FLOOR
    cap = settings.CONTEXT_PASSAGE_TOKENS
    keys = keys or {}
    units, below = _units(ranked, evidence, sizes, keys)

    quotes: dict[int, Quote] = {}
    taken: dict[int, set[int]] = {}
    quoted_keys: set[str] = set(said)
    # What does not come within STRONG_GAP of the question's best evidence shares WEAK_SHARE of the room.
    top = max((unit.evidence for unit in units), default=0.0)
    weak_room = WEAK_SHARE * room if STRONG_GAP is not None else float(room)
    waiting: list[_Unit] = []  # not taken for want of room, best first
    repeats: set[int] = set()  # exchanges with a unit left out for saying what is quoted already
    heap = [(-unit.score, unit.rank, n) for n, unit in enumerate(units)]
    heapq.heapify(heap)
    while heap:
        n = heapq.heappop(heap)[2]
        unit = units[n]
        pk = unit.episode_id
        fresh = unit.fresh(quoted_keys)
        if fresh < unit.evidence:
            # Part of its evidence is quoted already: judged again by the rest.
            if fresh < floor:
                repeats.add(pk)
                continue
            unit.score -= unit.evidence - fresh
            unit.evidence = fresh
            heapq.heappush(heap, (-unit.score, unit.rank, n))
            continue
        weak = STRONG_GAP is not None and unit.evidence < top - STRONG_GAP
        limit = min(room, int(weak_room)) if weak else room
        quote = quotes.get(pk)
        opening = quote is None
        if unit.whole_tokens:
            new = unit.passages
            cost = unit.whole_tokens + label_tokens
            if cost > limit:
                waiting += [unit] if not weak or cost <= weak_room else []
                continue
            quotes[pk] = Quote(pk, True, [], cost, unit.score)
        else:
            have = taken.setdefault(pk, set())
            new = [p for p in unit.passages if p.order not in have]
            cost = sum(p.tokens + JOIN_TOKENS for p in new) + (label_tokens if opening else 0)
            spent = quote.tokens if quote else 0
            if not new or cost > limit or spent + cost > cap + label_tokens + CUT_SLACK:
                waiting += [unit] if not weak or cost <= weak_room else []
                continue
            have.update(p.order for p in new)
            if opening:
                quote = quotes[pk] = Quote(pk, False, [], 0, unit.score)
            quote.tokens += cost
        room -= cost
        weak_room -= cost if weak else 0
        quoted_keys.update(key for p in new if (key := keys.get((pk, p.order))))
    spare: list[Quote] = []
    for unit in waiting:
        pk = unit.episode_id
        if len(spare) == SPARE:
            break
        if pk in quotes or any(q.episode_id == pk for q in spare):
            continue
        if unit.whole_tokens:
            spare.append(Quote(pk, True, [], unit.whole_tokens + label_tokens, unit.score))
        else:
            cost = sum(p.tokens + JOIN_TOKENS for p in unit.passages) + label_tokens
            spare.append(Quote(pk, False, _spans(unit.passages), cost, unit.score))
    for pk, orders in taken.items():
        if pk in quotes and not quotes[pk].whole:
            quotes[pk].spans = _spans([p for p in evidence[pk] if p.order in orders])
    chosen = sorted(quotes.values(), key=lambda q: -q.score)
    # An exchange whose evidence, once what is quoted already is set aside, is under the floor.
    held_back = {unit.episode_id for unit in waiting}
    below += [pk for pk in repeats if pk not in quotes and pk not in held_back and pk not in below]
    below.sort(key=list(ranked).index)
    above = [pk for pk in ranked if pk not in below and pk in evidence]
    return Selection(chosen, spare, below, above)


def _units(
    ranked: Sequence[int],
    evidence: dict[int, list[Evidence]],
    sizes: dict[int, int],
    keys: Mapping[tuple[int, int], str],
) -> tuple[list[_Unit], list[int]]:
    """The units of the exchanges that clear the floor, best first, and
    those that do not, in rank order."""
    floor = settings.CONTEXT_RELEVANCE_FLOOR
    cap = settings.CONTEXT_PASSAGE_TOKENS
    units: list[_Unit] = []
    below: list[int] = []
    for rank, pk in enumerate(ranked):
        passages = evidence.get(pk)
        if not passages:
            continue
        scores = [relevance.of(p.closeness, p.words) for p in passages]
        if passages[0].exchange_closeness is not None and (sizes.get(pk) or 0) <= cap:
            # A short exchange is also judged whole: a question may span both sides.
            whole = passages[0].exchange_closeness
            scores = [
                max(score, relevance.of(whole, p.words)) for score, p in zip(scores, passages, strict=True)
            ]
        if max(scores) < floor:
            below.append(pk)
            continue
        prior = PRIOR * PRIOR_RANKS / (rank + PRIOR_RANKS)
        judged = [(keys.get((pk, p.order), ""), score) for p, score in zip(passages, scores, strict=True)]
        size = sizes.get(pk) or sum(p.tokens for p in passages)
        if size <= cap:
            # A short exchange is quoted whole.
            units.append(_Unit(max(scores) + prior, rank, list(passages), size, max(scores), judged))
            continue
        users = [p for p in passages if p.side == 0]
        user_tokens = sum(p.tokens for p in users)
        for passage, score, own in zip(passages, scores, judged, strict=True):
            if score < floor:
                continue
            with_user = list(users) if passage.side == 1 and user_tokens <= cap * USER_SHARE else []
            units.append(_Unit(score + prior, rank, [*with_user, passage], 0, score, [own]))
    units.sort(key=lambda unit: (-unit.score, unit.rank))
    return units, below


def passage_keys(
    texts: Mapping[int, Text], evidence: Mapping[int, list[Evidence]]
) -> dict[tuple[int, int], str]:
    """Each passage's words in lower case, by (episode id, order): two
    passages with the same key say the same (a greeting, a sign-off, a
    sentence a reply repeats), and the second adds nothing to the first."""
    keys: dict[tuple[int, int], str] = {}
    for pk, passages in evidence.items():
        text = texts.get(pk)
        if text is None:
            continue
        whole = text.user_input + text.response
        for p in passages:
            keys[(pk, p.order)] = _key(whole[p.start : p.end])
    return keys


def _spans(passages: list[Evidence]) -> list[tuple[int, int]]:
    """The passages' offsets in order, adjacent ones of one side joined."""
    spans: list[tuple[int, int]] = []
    last: Evidence | None = None
    for passage in sorted(passages, key=lambda p: p.order):
        if spans and last is not None and passage.order == last.order + 1 and passage.side == last.side:
            spans[-1] = (spans[-1][0], passage.end)
        else:
            spans.append((passage.start, passage.end))
        last = passage
    return spans


def text_keys(texts: Iterable[str]) -> set[str]:
    """The keys (``passage_keys``) of the passages of ``texts``."""
    return {_key(text[start:end]) for text in texts for start, end in passage_spans(text)}


def _key(passage: str) -> str:
    """A passage's words in lower case: two passages with one key say the same."""
    return " ".join(_WORD.findall(passage.casefold()))
