"""A long retrieved exchange is quoted by the passages of it that matter for
the question (summaries.context.selection), in their order, with "…" where
text is left out; a short one in full; the budget stays a hard cap."""

from __future__ import annotations

import re

import pytest

from sessions_app.services import episodes_bulk_create
from sessions_app.tokens import count_tokens
from summaries.context import build_context
from summaries.context.layout import day

pytestmark = pytest.mark.django_db

FILLER = [
    "The build pipeline runs the linters before the unit tests.",
    "Caching the dependencies saves about a minute on each run.",
    "Logs are kept for thirty days and then rotated away.",
    "The staging server mirrors production settings closely.",
    "Deployments happen after the review has been approved.",
    "Monitoring alerts go to the shared channel during work hours.",
]


def long_text(lead: str, fact: str, repeat: int = 6) -> str:
    """Many sentences of filler with ``fact`` in the middle."""
    sentences = [f"{lead} {n}: {line}" for n in range(repeat) for line in FILLER]
    sentences.insert(len(sentences) // 2, fact)
    return " ".join(sentences)


def chatter(n: int) -> dict[str, str]:
    return {"user_input": f"Quick check {n}: is the pipeline green?", "response": f"Yes, run {n} passed."}


@pytest.fixture
def long_session(session, settings):
    settings.CONTEXT_PASSAGE_TOKENS = 150
    # A floor every exchange that names Ines clears (in so short a session her
    # name weighs little): these tests are about how passages are cut and quoted.
    settings.CONTEXT_RELEVANCE_FLOOR = 0.1
    items = [chatter(n) for n in range(40)]
    items[5] = {
        "user_input": long_text("Note", "My sister Ines moved to Porto last spring with her two cats."),
        "response": long_text("Reply", "Porto has good trains, so Ines can visit Lisbon often."),
    }
    items[9] = {"user_input": "Ines likes trams.", "response": "Porto has old trams."}
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    return session, episodes


def test_a_long_exchange_is_quoted_by_its_matching_passages_in_order(long_session, settings):
    session, episodes = long_session
    long, short = episodes[5], episodes[9]
    result = build_context(session=session, question="Where did Ines move to?", budget=2000)
    assert long.pk in result.retrieved and short.pk in result.retrieved
    prompt = result.prompt
    label = f"[{day(long.created_at)} · #6] Q: "
    start = prompt.index(label)
    quoted = prompt[start : prompt.index("\n\n", start)]
    # The user's side keeps the passage that holds the fact, and the reply the one that names Ines.
    assert "My sister Ines moved to Porto last spring with her two cats." in quoted
    assert "so Ines can visit Lisbon often." in quoted
    assert "\nA: " in quoted
    # Cut: "…" where text is left out, far shorter than the whole exchange.
    assert "…" in quoted
    assert long.user_input not in prompt and long.response not in prompt
    assert count_tokens(quoted) <= settings.CONTEXT_PASSAGE_TOKENS + 20
    # The passages' offsets point at the quoted text, in order, inside the exchange's quote.
    whole = long.user_input + long.response
    spans = result.passages[long.pk]
    assert spans == sorted(spans)
    at = [quoted.index(whole[s:e]) for s, e in spans]
    assert at == sorted(at)
    assert all(re.search(r"\w", whole[s:e]) for s, e in spans)
    # The user's side comes before "A:", the reply's after.
    split = len(long.user_input)
    for (s, e), where in zip(spans, at, strict=True):
        assert e <= split or s >= split
        assert (where < quoted.index("\nA: ")) == (e <= split)
    # A short exchange is quoted whole and has no passages.
    assert f"[{day(short.created_at)} · #10] Q: {short.user_input}\nA: {short.response}" in prompt
    assert short.pk not in result.passages
    assert result.as_dict()["passages"] == {str(long.pk): spans}


def test_a_side_without_a_kept_passage_is_marked_cut(long_session):
    session, episodes = long_session
    long = episodes[5]
    result = build_context(session=session, question="What about the trains to Lisbon?", budget=2000)
    assert long.pk in result.retrieved
    start = result.prompt.index("· #6] Q: ")
    quoted = result.prompt[start : result.prompt.index("\n\n", start)]
    # Nothing the user said matters here: their side is "…"; the reply keeps its passage
    # and what is around it.
    assert quoted.startswith("· #6] Q: …\nA: … ")
    assert "so Ines can visit Lisbon often." in quoted
    assert all(s >= len(long.user_input) for s, _ in result.passages[long.pk])
    for s, e in result.passages[long.pk]:
        assert (long.user_input + long.response)[s:e] in quoted


@pytest.mark.parametrize("budget", [150, 250, 400, 700, 1200])
def test_the_budget_stays_a_hard_cap_with_cut_exchanges(long_session, budget):
    session, _ = long_session
    question = "Where did Ines move, and what about her cats?"
    result = build_context(session=session, question=question, budget=budget)
    assert result.token_count == count_tokens(result.prompt) <= budget


def test_cutting_lets_more_exchanges_fit(long_session, settings):
    session, episodes = long_session
    question = "Where did Ines move to?"
    cut = build_context(session=session, question=question, budget=700)
    settings.CONTEXT_PASSAGE_TOKENS = 1_000_000
    whole = build_context(session=session, question=question, budget=700)
    assert episodes[5].pk in cut.retrieved
    # Quoted whole, the long exchange does not fit this budget at all.
    assert episodes[5].pk not in whole.retrieved
    assert whole.passages == {}



def test_a_short_message_is_kept_whole_while_a_long_reply_is_cut(session, settings):
    settings.CONTEXT_PASSAGE_TOKENS = 150
    items = [chatter(n) for n in range(30)]
    items[4] = {
        "user_input": "We adopted a grey kitten called Pebble last week.",
        "response": long_text("Reply", "Kittens need their vaccines at about eight weeks old."),
    }
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    long = episodes[4]
    result = build_context(session=session, question="When do kittens get vaccines?", budget=2000)
    assert long.pk in result.retrieved
    start = result.prompt.index("· #5] Q: ")
    quoted = result.prompt[start : result.prompt.index("\n\n", start)]
    # The message shares no word with the question, and is quoted whole all the same.
    assert quoted.startswith(f"· #5] Q: {long.user_input}\nA: … ")
    assert "Kittens need their vaccines at about eight weeks old." in quoted
    assert result.passages[long.pk][0] == [0, len(long.user_input)]
