"""The newest exchange always goes into the context: when it alone is longer
than the window's share of the budget, it is cut to its passages, its
newest part kept (what the user said and the end of the reply), instead of
being dropped or taking the budget; the payload's ``passages`` holds its
offsets. Short chats keep the seed's layout."""

from __future__ import annotations

import pytest

from sessions_app.services import episodes_bulk_create
from sessions_app.tokens import count_tokens
from summaries.context import INSTRUCTIONS, build_context
from summaries.context.layout import Exchange, render_prompt
from summaries.context.window import PAIR_LABEL_TOKENS, newest_part, split_window

pytestmark = pytest.mark.django_db

STEP = "Step {n}: open the settings file, change the port of service {n} and restart the worker."


def long_reply(steps: int, ending: str) -> str:
    """A reply of ``steps`` numbered lines (one passage each) ending with ``ending``."""
    return "\n".join(STEP.format(n=n) for n in range(steps)) + "\n" + ending


ENDING = "Finally, the deploy key lives in vault slot 77 and rotates every Friday."


@pytest.fixture
def newest_long(session):
    """Five short exchanges, then one of about 6,000 tokens."""
    items = [{"user_input": f"Short question {n}?", "response": f"Short answer {n}."} for n in range(5)]
    items.append(
        {"user_input": "How do I move every service to the new ports?", "response": long_reply(290, ENDING)}
    )
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    return session, episodes


def test_a_6000_token_newest_exchange_keeps_its_end_within_the_budget(newest_long, settings):
    settings.CONTEXT_RECENT_SHARE = 0.3
    session, episodes = newest_long
    newest = episodes[-1]
    assert 5800 < newest.token_count < 6500
    result = build_context(session=session, question="Where does the deploy key live?", budget=2000)
    assert result.token_count == count_tokens(result.prompt) <= 2000
    # Quoted, not dropped: its whole message and the end of the reply, the cut marked.
    assert result.recent[-1] == newest.pk
    assert f"Q{len(result.recent)}: {newest.user_input}\nA{len(result.recent)}: … " in result.prompt
    assert result.prompt.index(ENDING) < result.prompt.index(INSTRUCTIONS)
    assert STEP.format(n=0) not in result.prompt and STEP.format(n=289) in result.prompt
    # It takes no more than its share; the rest of the budget is left to the rest.
    start = result.prompt.index(newest.user_input)
    quoted = result.prompt[start : result.prompt.index(INSTRUCTIONS)]
    assert count_tokens(quoted) <= 0.3 * 2000
    # Its offsets: the message whole, then one run to the reply's end.
    whole = newest.user_input + newest.response
    spans = result.passages[newest.pk]
    assert spans[0] == [0, len(newest.user_input)]
    assert spans[-1][1] == len(whole) and spans[-1][0] > len(newest.user_input)
    assert all(whole[s:e] in result.prompt for s, e in spans)
    assert result.as_dict()["passages"][str(newest.pk)] == spans


@pytest.mark.parametrize("budget", [300, 700, 1000, 2000, 4000])
def test_the_cut_newest_exchange_stays_within_every_budget(newest_long, budget):
    session, episodes = newest_long
    result = build_context(session=session, question="What was step 12 about?", budget=budget)
    assert result.token_count == count_tokens(result.prompt) <= budget
    assert result.recent[-1] == episodes[-1].pk
    assert ENDING in result.prompt


def test_a_long_message_keeps_its_end_and_leaves_room_for_the_reply(settings):
    settings.CONTEXT_RECENT_SHARE = 0.5
    message = " ".join(f"Log line {n}: worker {n} restarted after a timeout." for n in range(400))
    message += " So why does the worker keep restarting?"
    reply = long_reply(200, ENDING)
    exchange = Exchange(1, message, reply, 1)
    split = split_window([exchange], {1: count_tokens(message) + count_tokens(reply)}, budget=1000)
    (kept,) = split.kept
    assert kept.user_input.startswith("… ")
    assert kept.user_input.endswith("So why does the worker keep restarting?")
    assert kept.response.startswith("… ") and kept.response.endswith(ENDING)
    assert count_tokens(kept.user_input) + count_tokens(kept.response) + PAIR_LABEL_TOKENS <= 500
    # Each side gets about half: neither crowds the other out.
    assert count_tokens(kept.user_input) > 150 and count_tokens(kept.response) > 150
    (user_span, reply_span) = split.passages[1]
    assert user_span[1] == len(message) and reply_span[1] == len(message) + len(reply)


def test_a_last_passage_longer_than_the_room_keeps_its_last_words():
    # One line of 3,000 words and no sentence end: one passage, longer than the room.
    reply = " ".join(f"word{n}" for n in range(3000))
    spans = newest_part(Exchange(1, "Go on.", reply, 1), room=100)
    assert spans[0] == (0, len("Go on."))
    start, end = spans[1]
    assert end == len("Go on.") + len(reply)
    kept = ("Go on." + reply)[start:end]
    assert kept.endswith("word2999") and kept.split()[0].startswith("word")
    assert 50 < count_tokens(kept) <= 100


def test_a_newest_exchange_that_fits_its_share_is_not_cut(settings):
    settings.CONTEXT_RECENT_SHARE = 0.3
    exchange = Exchange(1, "A question?", long_reply(10, ENDING), 1)
    tokens = {1: count_tokens(exchange.user_input) + count_tokens(exchange.response)}
    split = split_window([exchange], tokens, budget=2000)
    assert split.kept == [exchange] and split.passages == {}
    assert newest_part(exchange, room=10_000) is None


def test_short_chats_keep_the_seed_layout(session):
    items = [{"user_input": f"Question {n}?", "response": f"Answer {n}. More {n}."} for n in range(8)]
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    result = build_context(session=session, question="What next?", budget=2000)
    expected = render_prompt(
        question="What next?",
        recent=[Exchange(e.pk, e.user_input, e.response, e.position) for e in episodes],
        earlier=[],
        has_earlier_episodes=False,
    )
    assert result.prompt == expected
    assert "Previous conversation:\nQ1: Question 0?\nA1: Answer 0. More 0." in result.prompt
    assert result.recent == [e.pk for e in episodes]
    assert result.passages == {} and "…" not in result.prompt
