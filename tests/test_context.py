"""Context assembly (the hierarchical layout: question, summary, recent details): the builder and the context endpoint."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_episode_tokens, count_tokens
from summaries.context import INSTRUCTIONS, ContextTooLarge, build_context, full_history_tokens
from summaries.context.layout import Exchange, date_span, render_prompt
from summaries.digest import extractive_digest
from summaries.models import Summary
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


def make_episodes(session: ChatSession, n: int, start: int = 1) -> list[Episode]:
    return [
        EpisodeFactory(
            session=session,
            user_input=f"Question {i}?",
            response=f"Answer {i}. Second sentence {i}. Third sentence {i}.",
        )
        for i in range(start, start + n)
    ]


def pairs(episodes: list[Episode]) -> str:
    return "\n\n".join(
        f"Q{n}: {e.user_input}\nA{n}: {e.response}" for n, e in enumerate(episodes, 1)
    )


def span_of(first: Episode, last: Episode) -> str:
    """The date span a summary row of ``first``..``last`` is shown with, and its space."""
    return date_span(first.created_at, last.created_at) + " "


def summary_for(session: ChatSession, first: Episode, last: Episode, content: str | None = None):
    kwargs = {"content": content} if content else {}
    return SummaryFactory(session=session, first_episode_id=first.pk, last_episode_id=last.pk, **kwargs)


# --- layout -----------------------------------------------------------------


def test_empty_session_has_question_and_instructions_only():
    session = ChatSessionFactory()
    result = build_context(session=session, question="Hello?")
    assert result.prompt == f"User Question: Hello?\n\n{INSTRUCTIONS}"
    assert (result.summaries, result.recent, result.digest) == ([], [], [])


@pytest.mark.parametrize("n", [1, 8])
def test_up_to_eight_exchanges_use_previous_conversation(n):
    session = ChatSessionFactory()
    episodes = make_episodes(session, n)
    result = build_context(session=session, question="What next?")
    assert result.prompt == (
        "User Question: What next?\n\n"
        "Previous conversation:\n"
        f"{pairs(episodes)}\n\n"
        f"{INSTRUCTIONS}"
    )
    assert result.recent == [e.pk for e in episodes]
    assert result.summaries == result.digest == []
    assert "Conversation Summary" not in result.prompt


def test_more_than_eight_exchanges_summary_and_recent_details():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 12)
    summary = summary_for(session, episodes[0], episodes[3], "The user asked about questions one to four.")
    result = build_context(session=session, question="And then?")
    assert result.prompt == (
        "User Question: And then?\n\n"
        "Conversation Summary (earlier context):\n"
        f"{span_of(episodes[0], episodes[3])}The user asked about questions one to four.\n\n"
        "Recent conversation details:\n"
        f"{pairs(episodes[4:])}\n\n"
        f"{INSTRUCTIONS}"
    )
    assert result.summaries == [summary.pk]
    assert result.recent == [e.pk for e in episodes[4:]]
    assert result.digest == []


def test_nine_exchanges_eight_in_full_and_the_oldest_digested():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 9)
    result = build_context(session=session, question="And now?")
    digest = extractive_digest([(episodes[0].user_input, episodes[0].response)])
    assert result.prompt == (
        "User Question: And now?\n\n"
        f"Conversation Summary (earlier context):\n{digest}\n\n"
        "Recent conversation details:\n"
        f"{pairs(episodes[1:])}\n\n"
        f"{INSTRUCTIONS}"
    )
    assert (result.recent, result.digest) == ([e.pk for e in episodes[1:]], [episodes[0].pk])


def test_summaries_replace_the_episodes_they_cover():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 20)
    first = summary_for(session, episodes[0], episodes[5], "First part summary.")
    second = summary_for(session, episodes[6], episodes[11], "Second part summary.")
    result = build_context(session=session, question="q")
    assert result.summaries == [first.pk, second.pk]
    assert result.prompt.index("First part summary.") < result.prompt.index("Second part summary.")
    for covered in episodes[:12]:
        assert covered.user_input not in result.prompt
    assert result.digest == []


def test_uncovered_older_episodes_get_the_extractive_digest():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 15)
    summary = summary_for(session, episodes[0], episodes[2], "Early part summary.")
    result = build_context(session=session, question="q")
    lagging = episodes[3:7]
    digest = extractive_digest((e.user_input, e.response) for e in lagging)
    assert result.prompt == (
        "User Question: q\n\n"
        "Conversation Summary (earlier context):\n"
        f"{span_of(episodes[0], episodes[2])}Early part summary.\n\n{digest}\n\n"
        "Recent conversation details:\n"
        f"{pairs(episodes[7:])}\n\n"
        f"{INSTRUCTIONS}"
    )
    assert digest.startswith("Topics discussed: Question 4?, Question 5?")
    assert result.summaries == [summary.pk]
    assert result.digest == [e.pk for e in lagging]


def test_without_any_summary_the_digest_quotes_the_oldest_five():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 20)
    result = build_context(session=session, question="q")
    assert result.digest == [e.pk for e in episodes[:5]]
    assert extractive_digest((e.user_input, e.response) for e in episodes[:12]) in result.prompt
    assert result.recent == [e.pk for e in episodes[12:]]


def test_summary_inside_the_recent_window_is_left_out():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 10)
    old = summary_for(session, episodes[0], episodes[1], "Old part.")
    inside = summary_for(session, episodes[5], episodes[9], "Recent part, already in full.")
    result = build_context(session=session, question="q")
    assert result.summaries == [old.pk]
    assert inside.pk not in result.summaries
    assert "already in full" not in result.prompt


def test_summary_reaching_into_the_window_counts_as_covering():
    """A row covering 1..10 of 12 episodes: no digest for 3-4, they are covered."""
    session = ChatSessionFactory()
    episodes = make_episodes(session, 12)
    row = summary_for(session, episodes[0], episodes[9], "Everything so far.")
    result = build_context(session=session, question="q")
    assert result.summaries == [row.pk]
    assert result.digest == []


def test_token_count_is_the_prompts():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 14)
    summary_for(session, episodes[0], episodes[2])
    result = build_context(session=session, question="How long is this?")
    assert result.token_count == count_tokens(result.prompt) > 0


def test_full_history_tokens_uses_the_session_counter():
    session = ChatSessionFactory()
    episodes = make_episodes(session, 12)
    summary_for(session, episodes[0], episodes[3])
    session.refresh_from_db()
    result = build_context(session=session, question="What about the cost?")
    episode_tokens = sum(count_episode_tokens(e.user_input, e.response) for e in episodes)
    assert session.cached_total_tokens == episode_tokens
    assert result.full_history_tokens == full_history_tokens(session=session, question="What about the cost?")
    assert result.full_history_tokens > episode_tokens + count_tokens("What about the cost?")
    assert result.full_history_tokens > result.token_count


# --- budget -----------------------------------------------------------------


@pytest.fixture
def chained_session(settings):
    """23 episodes: three summary rows over 1-12, three lagging (13-15), eight recent.

    The window may take the whole budget here: these tests are about the
    order in which summaries and the digest give way (the window's share
    is tested on its own below)."""
    settings.CONTEXT_RECENT_SHARE = 1.0
    session = ChatSessionFactory()
    episodes = make_episodes(session, 23)
    rows = [
        summary_for(session, episodes[0], episodes[3], "Oldest summary. " * 10),
        summary_for(session, episodes[4], episodes[7], "Middle summary. " * 10),
        summary_for(session, episodes[8], episodes[11], "Newest summary. " * 10),
    ]
    return session, episodes, rows


def test_budget_drops_the_digest_first(chained_session):
    session, episodes, rows = chained_session
    full = build_context(session=session, question="q", budget=100_000)
    assert full.summaries == [r.pk for r in rows]
    assert full.digest == [e.pk for e in episodes[12:15]]

    result = build_context(session=session, question="q", budget=full.token_count - 1)
    assert result.omitted == {
        "summaries": [],
        "digest": [e.pk for e in episodes[12:15]],
        "retrieved": [],
        "below_floor": [],
        "recent": [],
        "summaries_before_episode": None,
        "notes": [],
    }
    assert result.summaries == [r.pk for r in rows]
    assert "Topics discussed:" not in result.prompt
    assert result.token_count == count_tokens(result.prompt) <= full.token_count - 1
    assert result.within_budget


def test_budget_then_drops_the_oldest_summaries_keeping_the_newest(chained_session):
    session, episodes, rows = chained_session
    full = build_context(session=session, question="q", budget=100_000)
    newest_only = full.prompt
    for row in rows[:2]:
        newest_only = newest_only.replace(span_of(episodes[0], episodes[0]) + row.content + "\n\n", "")
    digest_start = newest_only.index("\n\nTopics discussed:")
    newest_only = newest_only[:digest_start] + newest_only[newest_only.index("\n\nRecent conversation") :]
    assert "Newest summary." in newest_only and "Middle summary." not in newest_only

    result = build_context(session=session, question="q", budget=count_tokens(newest_only))
    assert result.prompt == newest_only
    assert result.omitted == {
        "summaries": [rows[0].pk, rows[1].pk],
        "digest": [e.pk for e in episodes[12:15]],
        "retrieved": [],
        "below_floor": [],
        "recent": [],
        "summaries_before_episode": None,
        "notes": [],
    }
    assert result.summaries == [rows[2].pk]

    tight = build_context(session=session, question="q", budget=result.token_count - 1)
    assert tight.omitted["summaries"] == [r.pk for r in rows]
    assert tight.summaries == tight.digest == []
    assert "Conversation Summary" not in tight.prompt
    assert tight.prompt.startswith("User Question: q\n\nRecent conversation details:\nQ1: Question 16?")
    assert tight.recent == [e.pk for e in episodes[15:]]


def test_a_budget_too_small_for_the_question_is_refused(chained_session):
    session, _, _ = chained_session
    with pytest.raises(ContextTooLarge) as raised:
        build_context(session=session, question="Keep me", budget=1)
    assert raised.value.budget == 1 and raised.value.needed > 1


def test_the_recent_window_is_trimmed_from_its_oldest_end_only_when_nothing_else_is_left(chained_session):
    session, episodes, _ = chained_session
    recent = [Exchange(e.pk, e.user_input, e.response, e.position) for e in episodes[15:]]
    no_extras = count_tokens(
        render_prompt(question="Keep me", recent=recent, earlier=[], has_earlier_episodes=True)
    )
    result = build_context(session=session, question="Keep me", budget=no_extras - 60)
    assert result.prompt.startswith("User Question: Keep me")
    assert result.summaries == result.digest == result.retrieved == []
    assert 0 < len(result.recent) < 8
    assert result.recent == [e.pk for e in episodes[23 - len(result.recent) :]]
    assert result.token_count <= no_extras - 60
    assert result.within_budget


def test_budget_equal_to_the_full_prompt_leaves_nothing_out(chained_session):
    session, _, _ = chained_session
    full = build_context(session=session, question="q")
    exact = build_context(session=session, question="q", budget=full.token_count)
    assert exact.prompt == full.prompt and exact.within_budget
    assert exact.omitted == {
        "summaries": [], "digest": [], "retrieved": [], "below_floor": [], "recent": [], "summaries_before_episode": None,
        "notes": [],
    }


def test_budget_large_enough_leaves_nothing_out(chained_session):
    session, _, rows = chained_session
    result = build_context(session=session, question="q", budget=1_000_000)
    assert result.omitted == {
        "summaries": [], "digest": [], "retrieved": [], "below_floor": [], "recent": [], "summaries_before_episode": None,
        "notes": [],
    }
    assert result.summaries == [r.pk for r in rows]


def test_a_chain_longer_than_the_cap_is_reported_not_read(chained_session, settings):
    session, episodes, rows = chained_session
    settings.CONTEXT_MAX_SUMMARIES = 2
    result = build_context(session=session, question="q")
    assert result.summaries == [rows[1].pk, rows[2].pk]
    assert result.omitted["summaries"] == [rows[0].pk]
    assert result.omitted["summaries_before_episode"] == rows[0].last_episode_id + 1
    assert "Oldest summary." not in result.prompt
    assert result.digest == [e.pk for e in episodes[12:15]]

    squeezed = build_context(session=session, question="q", budget=result.token_count - 1)
    assert squeezed.omitted["summaries"] == [rows[0].pk]
    assert squeezed.omitted["digest"] == [e.pk for e in episodes[12:15]]


# --- cost -------------------------------------------------------------------


def _fill(session: ChatSession, n: int) -> None:
    """``n`` episodes by bulk insert, the session's counters kept right."""
    tokens = count_episode_tokens("q", "a.")
    start = ChatSession.objects.get(pk=session.pk).cached_last_position
    Episode.objects.bulk_create(
        (
            Episode(
                session=session, owner_id=session.owner_id, position=start + k, user_input="q", response="a.",
                token_count=tokens,
            )  # fmt: skip
            for k in range(1, n + 1)
        ),
        batch_size=5_000,
    )
    ChatSession.objects.filter(pk=session.pk).update(
        cached_episode_count=F("cached_episode_count") + n,
        cached_total_tokens=F("cached_total_tokens") + n * tokens,
        cached_last_position=F("cached_last_position") + n,
    )


def _shaped_session(n: int) -> ChatSession:
    """``n`` episodes; a summary chain over all but the last 11; three lagging."""
    session = ChatSessionFactory()
    _fill(session, n)
    episodes = Episode.objects.filter(session=session)
    first = episodes.order_by("pk").values_list("pk", flat=True)[0]
    last = episodes.order_by("-pk").values_list("pk", flat=True)[11]
    # A chain of rows tiling the older part: 2 rows for a short session, many for a long one.
    rows = max(2, (n - 11) // 2_000)
    step = (last - first + 1) // rows
    bounds = [first + i * step for i in range(rows)] + [last + 1]
    Summary.objects.bulk_create(
        Summary(
            session=session, content=f"Part {i}.", token_count=3, first_episode_id=lo, last_episode_id=hi - 1
        )
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False))
    )
    session.refresh_from_db()
    return session


def test_query_count_does_not_grow_with_the_session(settings):
    # Both longer than a 10,000-token context holds, so neither is sent whole.
    small = _shaped_session(2_000)
    large = _shaped_session(100_000)
    counts = []
    results = []
    for session in (small, large):
        with CaptureQueriesContext(connection) as ctx:
            results.append(build_context(session=session, question="q", budget=10_000))
        counts.append(len(ctx.captured_queries))
    # The recent episodes, the chain, the digest's episodes, the chain's dates,
    # the search (its terms, its window) and the retrieved episodes' texts.
    assert counts[0] == counts[1] <= 8  # 7 and the notes about the person
    assert len(results[0].summaries) == 2
    assert len(results[1].summaries) == settings.CONTEXT_MAX_SUMMARIES
    assert results[1].omitted["summaries_before_episode"] is not None
    for result in results:
        assert len(result.recent) == 8
        assert len(result.digest) == 3
    assert results[1].full_history_tokens > results[0].full_history_tokens * 40


def test_short_session_needs_two_queries():
    session = ChatSessionFactory()
    make_episodes(session, 3)
    with CaptureQueriesContext(connection) as ctx:
        build_context(session=session, question="q")
    # The window (one query of index probes) and the notes about the person.
    assert len(ctx.captured_queries) == 2


# --- endpoint ---------------------------------------------------------------


def context_url(session) -> str:
    return f"/api/sessions/{session.uuid}/context/"


@pytest.fixture
def owned(owner, settings):
    # The endpoint's tests: the whole window in full, as in the builder's budget tests above.
    settings.CONTEXT_RECENT_SHARE = 1.0
    session = ChatSessionFactory(owner=owner)
    episodes = make_episodes(session, 12)
    summary_for(session, episodes[0], episodes[3], "Early summary.")
    session.refresh_from_db()  # the counters the write path kept
    return session


def test_endpoint_returns_the_context(api_client, owned):
    response = api_client.get(context_url(owned), {"question": "What now?", "budget": 5000})
    assert response.status_code == 200
    body = response.json()
    expected = build_context(session=owned, question="What now?", budget=5000)
    assert body == expected.as_dict()
    assert set(body) >= {
        "prompt", "token_count", "full_history_tokens", "summaries", "recent", "digest", "omitted",
    }  # fmt: skip
    assert body["prompt"].startswith("User Question: What now?\n\nConversation Summary (earlier context):")


def test_endpoint_without_question_or_budget(api_client, owned, settings):
    body = api_client.get(context_url(owned)).json()
    assert body["prompt"].startswith("User Question: \n\n")
    assert body["budget"] == settings.CONTEXT_DEFAULT_BUDGET
    assert body["omitted"] == {
        "summaries": [], "digest": [], "retrieved": [], "below_floor": [], "recent": [], "summaries_before_episode": None,
        "notes": [],
    }


def test_endpoint_budget_reports_omitted(api_client, owned):
    full = api_client.get(context_url(owned)).json()
    body = api_client.get(context_url(owned), {"budget": full["token_count"] - 1}).json()
    assert body["omitted"]["summaries"] == full["summaries"]
    assert body["summaries"] == []


def test_endpoint_other_user_gets_404(other_client, owned):
    assert other_client.get(context_url(owned)).status_code == 404


def test_endpoint_staff_sees_any_session(staff_client, owned):
    response = staff_client.get(context_url(owned))
    assert response.status_code == 200
    assert len(response.json()["recent"]) == 8


def test_endpoint_anonymous_refused(anon_client, owned):
    assert anon_client.get(context_url(owned)).status_code in (401, 403)


def test_endpoint_unknown_uuid_404(api_client):
    assert api_client.get("/api/sessions/00000000-0000-0000-0000-000000000000/context/").status_code == 404
    assert api_client.get("/api/sessions/nope/context/").status_code == 404


@pytest.mark.parametrize("budget", ["0", "-5", "1000001", "abc", "1.5", "99999999999999999999"])
def test_endpoint_bad_budget_is_400_naming_it(api_client, owned, budget):
    response = api_client.get(context_url(owned), {"budget": budget})
    assert response.status_code == 400
    assert list(response.json()) == ["budget"]


def test_endpoint_question_length_limit(api_client, owned, settings):
    settings.EPISODE_MAX_CHARS = 20
    response = api_client.get(context_url(owned), {"question": "x" * 21})
    assert response.status_code == 400
    assert list(response.json()) == ["question"]
    assert api_client.get(context_url(owned), {"question": "x" * 20}).status_code == 200


def test_endpoint_query_count_is_constant(staff_client):
    counts = []
    for size in (2_000, 5_000):
        session = _shaped_session(size)
        with CaptureQueriesContext(connection) as ctx:
            # A budget that holds the digest beside every exchange retrieved (as above).
            response = staff_client.get(context_url(session), {"question": "q", "budget": 10_000})
        assert response.status_code == 200
        assert len(response.json()["digest"]) == 3
        counts.append(len(ctx.captured_queries))
    # The session lookup, then the builder's reads (see the test above).
    assert counts[0] == counts[1] <= 9
