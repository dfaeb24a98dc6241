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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings

from sessions_app import relevance
from sessions_app.excerpts import Evidence

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
#: A passage is quoted only when its evidence comes within this of the
#: question's best passage (None: the floor alone decides). Measured and not
#: kept: 0.3 to 0.5 cut the synthetic set's tokens by up to a third at the
#: same recall, and lowered the assistant and dialogue sets (bench/README.md).
GAP: float | None = None
#: What the gap is measured on: "evidence" alone, or "ranked" (with the rank's prior).
GAP_ON = "evidence"
#: The best units quoted whatever the gap (still over the floor).
KEEP = 0


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


def select(
    *,
    ranked: Sequence[int],
    evidence: dict[int, list[Evidence]],
    sizes: dict[int, int],
    room: int,
    label_tokens: int,
) -> Selection:
    """The passages to quote for ``room`` tokens from the exchanges
    ``ranked`` (best first) whose passages ``evidence`` holds; ``sizes``:
    each exchange's tokens whole."""
    floor = settings.CONTEXT_RELEVANCE_FLOOR
    cap = settings.CONTEXT_PASSAGE_TOKENS
    # (score with the rank's prior, rank, passages, tokens when whole, evidence alone)
    units: list[tuple[float, int, list[Evidence], int, float]] = []
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
        size = sizes.get(pk) or sum(p.tokens for p in passages)
        if size <= cap:
            # A short exchange is quoted whole.
            units.append((max(scores) + prior, rank, list(passages), size, max(scores)))
            continue
        users = [p for p in passages if p.side == 0]
        user_tokens = sum(p.tokens for p in users)
        for passage, score in zip(passages, scores, strict=True):
            if score < floor:
                continue
            with_user = list(users) if passage.side == 1 and user_tokens <= cap * USER_SHARE else []
            units.append((score + prior, rank, [*with_user, passage], 0, score))
    units.sort(key=lambda unit: (-unit[0], unit[1]))
    if GAP is not None and units:
        units = _near_the_best(units)
        left = {unit[2][0].episode_id for unit in units}
        below += [pk for pk in ranked if pk in evidence and pk not in below and pk not in left]
        below.sort(key=list(ranked).index)

    quotes: dict[int, Quote] = {}
    taken: dict[int, set[int]] = {}
    for score, _rank, passages, whole_tokens, _evidence in units:
        pk = passages[0].episode_id
        quote = quotes.get(pk)
        opening = quote is None
        if whole_tokens:
            cost = whole_tokens + label_tokens
            if cost <= room:
                quotes[pk] = Quote(pk, True, [], cost, score)
                room -= cost
            continue
        have = taken.setdefault(pk, set())
        new = [p for p in passages if p.order not in have]
        cost = sum(p.tokens + JOIN_TOKENS for p in new) + (label_tokens if opening else 0)
        spent = quote.tokens if quote else 0
        if not new or cost > room or spent + cost > cap + label_tokens + CUT_SLACK:
            continue
        have.update(p.order for p in new)
        if opening:
            quote = quotes[pk] = Quote(pk, False, [], 0, score)
        quote.tokens += cost
        room -= cost
    spare: list[Quote] = []
    for score, _rank, passages, whole_tokens, _evidence in units:
        pk = passages[0].episode_id
        if len(spare) == SPARE:
            break
        if pk in quotes or any(q.episode_id == pk for q in spare):
            continue
        if whole_tokens:
            spare.append(Quote(pk, True, [], whole_tokens + label_tokens, score))
        else:
            cost = sum(p.tokens + JOIN_TOKENS for p in passages) + label_tokens
            spare.append(Quote(pk, False, _spans(passages), cost, score))
    for pk, orders in taken.items():
        if pk in quotes and not quotes[pk].whole:
            quotes[pk].spans = _spans([p for p in evidence[pk] if p.order in orders])
    chosen = sorted(quotes.values(), key=lambda q: -q.score)
    above = [pk for pk in ranked if pk not in below and pk in evidence]
    return Selection(chosen, spare, below, above)


def _near_the_best(units: list[tuple[float, int, list[Evidence], int, float]]) -> list:
    """The units within ``GAP`` of the best (on the evidence alone, or with
    the rank's prior: ``GAP_ON``), the best ``KEEP`` whatever their distance."""
    at = 0 if GAP_ON == "ranked" else 4
    best = max(unit[at] for unit in units)
    return [unit for n, unit in enumerate(units) if n < KEEP or unit[at] >= best - (GAP or 0.0)]


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
