"""The budget goes to the best passages across the ranked exchanges
(summaries.context.selection), not to the best exchanges each cut alike;
nothing under CONTEXT_RELEVANCE_FLOOR is chosen, whatever room is left."""

from __future__ import annotations

import pytest

from sessions_app.excerpts import Evidence
from summaries.context.selection import select

LABEL = 15


def passages(pk: int, closeness: list[float], *, tokens: int = 40, words: float = 0.0) -> list[Evidence]:
    """An exchange of one short user message and a long reply cut into passages of ``tokens``."""
    found = [Evidence(pk, 0, 0, 0, 20, 200, 0.0, 0.0)]  # the user's side: long, unrelated
    start = 20
    for n, close in enumerate(closeness, 1):
        found.append(Evidence(pk, n, 1, start, start + 100, tokens, words, close))
        start += 101
    return found


@pytest.fixture(autouse=True)
def floor(settings):
    settings.CONTEXT_RELEVANCE_FLOOR = 0.15
    settings.CONTEXT_PASSAGE_TOKENS = 300


def test_the_best_passage_wins_over_the_better_ranked_exchange():
    # The first ranked exchange has only middling passages; the fifth holds the one that answers.
    evidence = {1: passages(1, [0.2, 0.22, 0.18]), 5: passages(5, [0.05, 0.7, 0.04])}
    sizes = {1: 400, 5: 400}
    picked = select(ranked=[1, 5], evidence=evidence, sizes=sizes, room=40 + LABEL + 4, label_tokens=LABEL)
    assert [quote.episode_id for quote in picked.quotes] == [5]
    assert picked.quotes[0].spans == [(121, 221)]  # the second passage of the reply, alone


def test_nothing_under_the_floor_is_quoted_however_much_room_is_left():
    evidence = {1: passages(1, [0.1, 0.05]), 2: passages(2, [0.12, 0.3])}
    picked = select(ranked=[1, 2], evidence=evidence, sizes={1: 400, 2: 400}, room=10_000, label_tokens=LABEL)
    assert [quote.episode_id for quote in picked.quotes] == [2]
    assert picked.quotes[0].spans == [(121, 221)]  # its passage under the floor is left out too
    assert picked.below_floor == [1]
    assert picked.above_floor == [2]
    assert picked.spare == []


def test_one_exchange_with_several_good_passages_pays_its_label_once():
    evidence = {1: passages(1, [0.5, 0.45]), 2: passages(2, [0.46])}
    # Room for two passages and one label, not two labels.
    room = 2 * (40 + 2) + LABEL
    picked = select(ranked=[1, 2], evidence=evidence, sizes={1: 400, 2: 400}, room=room, label_tokens=LABEL)
    assert [quote.episode_id for quote in picked.quotes] == [1]
    assert picked.quotes[0].spans == [(20, 221)]  # adjacent passages of one side joined
    assert [quote.episode_id for quote in picked.spare] == [2]


def test_a_short_exchange_is_a_unit_whole():
    short = [Evidence(3, 0, 0, 0, 30, 10, 0.0, 0.4), Evidence(3, 1, 1, 30, 60, 10, 0.0, 0.1)]
    picked = select(ranked=[3], evidence={3: short}, sizes={3: 20}, room=100, label_tokens=LABEL)
    (quote,) = picked.quotes
    assert quote.whole and quote.tokens == 20 + LABEL


def short(pk: int, closeness: list[float], *, tokens: int = 30) -> list[Evidence]:
    """A short exchange (quoted whole) of passages of ``tokens`` each."""
    return [
        Evidence(pk, n, n % 2, 100 * n, 100 * n + 90, tokens, 0.0, close) for n, close in enumerate(closeness)
    ]


def keyed(evidence: dict[int, list[Evidence]], said: dict[tuple[int, int], str]) -> dict:
    """Each passage's key: its own unless ``said`` gives one (the same words as another's)."""
    return {
        (pk, p.order): said.get((pk, p.order), f"{pk}/{p.order}") for pk, ps in evidence.items() for p in ps
    }


def test_a_passage_quoted_already_is_no_evidence_again():
    # Exchanges 1 and 2 close on the same sign-off; 2 says nothing else that clears the floor.
    evidence = {1: short(1, [0.5, 0.1]), 2: short(2, [0.1, 0.5]), 3: short(3, [0.2, 0.05])}
    keys = keyed(evidence, {(1, 0): "see you at the lake", (2, 1): "see you at the lake"})
    sizes = {1: 60, 2: 60, 3: 60}
    picked = select(
        ranked=[1, 2, 3], evidence=evidence, sizes=sizes, room=10_000, label_tokens=LABEL, keys=keys
    )
    assert [quote.episode_id for quote in picked.quotes] == [1, 3]
    assert picked.below_floor == [2]  # set aside what 1 says, its evidence is under the floor
    assert picked.above_floor == [1, 3]
    # Without the keys, both are quoted: the repeat counted twice.
    unkeyed = select(ranked=[1, 2, 3], evidence=evidence, sizes=sizes, room=10_000, label_tokens=LABEL)
    assert sorted(quote.episode_id for quote in unkeyed.quotes) == [1, 2, 3]


def test_a_repeat_is_judged_by_what_else_it_says(monkeypatch):
    from summaries.context import selection

    monkeypatch.setattr(selection, "STRONG_GAP", None)  # all that clears the floor takes the room
    # 2 ranks second by a passage that repeats 1's; by its own words it comes after 3.
    evidence = {1: short(1, [0.6]), 2: short(2, [0.6, 0.2]), 3: short(3, [0.4])}
    keys = keyed(evidence, {(1, 0): "the same sentence", (2, 0): "the same sentence"})
    sizes = {1: 30, 2: 60, 3: 30}
    room = (30 + LABEL) * 2  # two short exchanges
    picked = select(
        ranked=[1, 2, 3], evidence=evidence, sizes=sizes, room=room, label_tokens=LABEL, keys=keys
    )
    assert [quote.episode_id for quote in picked.quotes] == [1, 3]
    assert [quote.episode_id for quote in picked.spare] == [2]
    assert picked.below_floor == []


def test_what_is_far_below_the_best_shares_a_part_of_the_room(monkeypatch):
    from summaries.context import selection

    monkeypatch.setattr(selection, "STRONG_GAP", 0.3)
    monkeypatch.setattr(selection, "WEAK_SHARE", 0.25)
    # One exchange plainly answers (0.8), one comes near it (0.6); six more clear the floor, far below.
    evidence = {1: short(1, [0.8]), 2: short(2, [0.6]), **{pk: short(pk, [0.3]) for pk in range(3, 9)}}
    sizes = dict.fromkeys(evidence, 30)
    room = 8 * (30 + LABEL)  # all eight would fit
    picked = select(ranked=list(range(1, 9)), evidence=evidence, sizes=sizes, room=room, label_tokens=LABEL)
    # The two near the best, then the far ones in a quarter of the room (two of them), best ranked first.
    assert [quote.episode_id for quote in picked.quotes] == [1, 2, 3, 4]
    assert sum(quote.tokens for quote in picked.quotes[2:]) <= room * 0.25
    assert picked.spare == []  # what the share left out is not offered to the exact count
    assert picked.above_floor == list(range(1, 9)) and picked.below_floor == []


def test_when_everything_is_near_the_best_the_room_is_all_theirs(monkeypatch):
    from summaries.context import selection

    monkeypatch.setattr(selection, "STRONG_GAP", 0.3)
    monkeypatch.setattr(selection, "WEAK_SHARE", 0.25)
    evidence = {pk: short(pk, [0.3 + 0.01 * pk]) for pk in range(1, 9)}
    sizes = dict.fromkeys(evidence, 30)
    room = 8 * (30 + LABEL)
    picked = select(ranked=list(range(1, 9)), evidence=evidence, sizes=sizes, room=room, label_tokens=LABEL)
    assert len(picked.quotes) == 8


def test_what_the_recent_window_says_is_quoted_already():
    from summaries.context.selection import text_keys

    # The window's newest reply and exchange 2's first passage say the same, in other case and spacing.
    said = text_keys(["Sounds good.", "See you at the  LAKE on Friday!"])
    evidence = {1: short(1, [0.4]), 2: short(2, [0.5, 0.1])}
    keys = keyed(evidence, {(2, 0): "see you at the lake on friday"})
    sizes = {1: 30, 2: 60}
    picked = select(
        ranked=[1, 2], evidence=evidence, sizes=sizes, room=10_000, label_tokens=LABEL, keys=keys, said=said
    )
    assert [quote.episode_id for quote in picked.quotes] == [1]
    assert picked.below_floor == [2]
