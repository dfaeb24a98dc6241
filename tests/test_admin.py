"""Staff admin for sessions and episodes, through the admin pages: who gets
in, constant query counts, the stats columns, search, filters, and episode
texts kept out of the list page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from summaries.admin.sessions import SUMMARY_ROWS_INLINE
from summaries.models import SummarizationState
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db

SESSIONS_URL = reverse("admin:sessions_app_chatsession_changelist")
EPISODES_URL = reverse("admin:sessions_app_episode_changelist")
SUMMARIES_URL = reverse("admin:summaries_summary_changelist")


@pytest.fixture
def staff_browser(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def make_sessions(count: int, episodes_each: int = 2) -> list[ChatSession]:
    sessions = []
    for n in range(count):
        session = ChatSessionFactory(owner=UserFactory())
        episodes = EpisodeFactory.create_batch(episodes_each, session=session)
        SummaryFactory(
            session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[-1].pk
        )
        if n % 2:
            SummarizationState.objects.filter(session=session).update(state=SummarizationState.State.QUEUED)
        sessions.append(session)
    return sessions


def page_queries(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


# --- who gets in ---------------------------------------------------------------


@pytest.mark.parametrize("url", [SESSIONS_URL, EPISODES_URL, SUMMARIES_URL, reverse("admin:index")])
def test_anonymous_visitors_are_sent_to_the_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("url", [SESSIONS_URL, EPISODES_URL, SUMMARIES_URL, reverse("admin:index")])
def test_non_staff_users_are_sent_to_the_login(client, owner, url):
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_staff_without_model_permissions_are_refused(client):
    client.force_login(UserFactory(username="helper", is_staff=True))
    assert client.get(SESSIONS_URL).status_code == 403
    assert client.get(EPISODES_URL).status_code == 403


def test_staff_with_view_permission_may_only_look(client):
    helper = UserFactory(username="viewer", is_staff=True)
    helper.user_permissions.add(Permission.objects.get(codename="view_chatsession"))
    session = make_sessions(1)[0]
    client.force_login(helper)
    assert client.get(SESSIONS_URL).status_code == 200
    change_url = reverse("admin:sessions_app_chatsession_change", args=[session.pk])
    assert client.get(change_url).status_code == 200
    assert client.post(change_url, {"title": "renamed", "metadata": "{}"}).status_code == 403
    session.refresh_from_db()
    assert session.title != "renamed"


# --- sessions --------------------------------------------------------------------


def test_session_list_query_count_does_not_grow_with_sessions(staff_browser):
    make_sessions(3)
    small = page_queries(staff_browser, SESSIONS_URL)
    make_sessions(12, episodes_each=4)
    large = page_queries(staff_browser, SESSIONS_URL)
    assert len(small) == len(large)
    # The rows, their stats (counters on the rows), owners and states come
    # from a single query, and no query reads the episodes.
    assert not [sql for sql in large if "sessions_app_episode" in sql]
    row_queries = [sql for sql in large if "cached_episode_count" in sql and "auth_user" in sql]
    assert len(row_queries) == 1
    assert "summaries_summarizationstate" in row_queries[0]


def test_session_list_shows_the_aggregate_stats(staff_browser):
    busy = ChatSessionFactory(title="busy one")
    episodes = EpisodeFactory.create_batch(3, session=busy)
    quiet = ChatSessionFactory(title="quiet one")
    SummarizationState.objects.create(
        session=busy, state=SummarizationState.State.FAILED, last_error="model server answered 503"
    )
    response = staff_browser.get(SESSIONS_URL)
    rows = {s.pk: s for s in response.context["cl"].result_list}
    total = sum(e.token_count for e in episodes)
    assert (rows[busy.pk].episode_count, rows[busy.pk].total_tokens) == (3, total)
    assert rows[busy.pk].last_episode_id == episodes[-1].pk
    assert (rows[quiet.pk].episode_count, rows[quiet.pk].total_tokens, rows[quiet.pk].last_episode_id) == (
        0,
        0,
        None,
    )
    html = response.content.decode()
    assert f'<td class="field-total_tokens">{total}</td>' in html
    assert f'<td class="field-last_episode_id">{episodes[-1].pk}</td>' in html
    assert "Failed: model server answered 503" in html
    assert "Idle" in html  # the quiet session has no state row yet


def test_session_list_sorts_by_a_stats_column(staff_browser):
    sessions = [ChatSessionFactory() for _ in range(3)]
    for n, session in enumerate(sessions):
        EpisodeFactory.create_batch(n + 1, session=session)
    cl = staff_browser.get(SESSIONS_URL, {"o": "4"}).context["cl"]  # 4th column: episodes, ascending
    assert [s.episode_count for s in cl.result_list] == [1, 2, 3]


@pytest.mark.parametrize(
    "query",
    [
        lambda s: str(s.uuid),
        lambda s: str(s.uuid).split("-")[0],
        lambda s: "needle",
        lambda s: "alice",
    ],
    ids=["uuid", "uuid-part", "title", "owner"],
)
def test_session_search(staff_browser, query):
    wanted = ChatSessionFactory(title="A needle in the haystack", owner=UserFactory(username="alice"))
    ChatSessionFactory(title="Something else", owner=UserFactory(username="bob"))
    cl = staff_browser.get(SESSIONS_URL, {"q": query(wanted)}).context["cl"]
    assert [s.pk for s in cl.result_list] == [wanted.pk]


def test_session_filter_by_owner_username(staff_browser):
    alice = UserFactory(username="alice")
    mine = [ChatSessionFactory(owner=alice) for _ in range(2)]
    ChatSessionFactory(owner=UserFactory(username="alicia"))
    response = staff_browser.get(SESSIONS_URL, {"owner": "Alice"})
    assert {s.pk for s in response.context["cl"].result_list} == {s.pk for s in mine}
    html = response.content.decode()
    assert 'name="owner" value="Alice"' in html  # the box keeps what was typed


@pytest.mark.parametrize(
    ("url", "param"), [(SESSIONS_URL, "owner"), (EPISODES_URL, "session"), (SUMMARIES_URL, "session")]
)
def test_filter_counts_can_be_shown(staff_browser, url, param):
    session = make_sessions(1)[0]
    value = session.owner.username if param == "owner" else str(session.uuid)
    response = staff_browser.get(url, {"_facets": "1", param: value})
    assert response.status_code == 200
    assert response.context["cl"].result_count >= 1


def test_owner_filter_keeps_the_other_parameters(staff_browser):
    ChatSessionFactory(owner=UserFactory(username="alice"))
    html = staff_browser.get(SESSIONS_URL, {"owner": "alice", "activity": "today", "q": "x"}).content.decode()
    assert '<input type="hidden" name="activity" value="today">' in html
    assert '<input type="hidden" name="q" value="x">' in html


@pytest.mark.parametrize(
    ("activity", "expected"),
    [("today", {"today"}), ("week", {"today", "three_days"}), ("older", {"month"})],
)
def test_session_filter_by_activity(staff_browser, activity, expected):
    now = timezone.now()
    sessions = {name: ChatSessionFactory(title=name) for name in ("today", "three_days", "month")}
    ChatSession.objects.filter(pk=sessions["three_days"].pk).update(updated_at=now - timedelta(days=3))
    ChatSession.objects.filter(pk=sessions["month"].pk).update(updated_at=now - timedelta(days=30))
    cl = staff_browser.get(SESSIONS_URL, {"activity": activity}).context["cl"]
    assert {s.title for s in cl.result_list} == expected


def test_session_page_shows_its_summary_chain_and_links_to_its_episodes(staff_browser):
    session = ChatSessionFactory()
    episodes = EpisodeFactory.create_batch(4, session=session)
    first = SummaryFactory(
        session=session, content="Early part.", first_episode_id=episodes[0].pk,
        last_episode_id=episodes[1].pk,
    )
    SummaryFactory(
        session=session, content="Later part.", first_episode_id=episodes[2].pk,
        last_episode_id=episodes[3].pk,
    )
    response = staff_browser.get(reverse("admin:sessions_app_chatsession_change", args=[session.pk]))
    html = response.content.decode()
    assert "Early part." in html and "Later part." in html
    # The chain names each row's range by positions in the session.
    assert "Exchanges 1–2" in html and "Exchanges 3–4" in html
    assert reverse("admin:summaries_summary_change", args=[first.pk]) in html
    assert f"{EPISODES_URL}?session={session.uuid}" in html
    # Read-mostly: the inline offers no add or delete.
    assert "summaries-__prefix__" not in html
    assert "summaries-0-DELETE" not in html


def test_session_page_lists_only_the_newest_summary_rows(staff_browser):
    session = ChatSessionFactory()
    for n in range(SUMMARY_ROWS_INLINE + 3):
        SummaryFactory(session=session, content=f"Row {n}.", first_episode_id=n + 1, last_episode_id=n + 1)
    response = staff_browser.get(reverse("admin:sessions_app_chatsession_change", args=[session.pk]))
    (formset,) = response.context["inline_admin_formsets"]
    shown = [form.instance.first_episode_id for form in formset.formset.forms]
    assert shown == list(range(SUMMARY_ROWS_INLINE + 3, 3, -1))
    assert f"{SUMMARIES_URL}?session={session.uuid}" in response.content.decode()
    # The session form still saves with the capped chain below it.
    prefix = formset.formset.prefix
    posted = {
        "title": "renamed",
        "metadata": "{}",
        f"{prefix}-TOTAL_FORMS": str(len(shown)),
        f"{prefix}-INITIAL_FORMS": str(len(shown)),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }
    for i, form in enumerate(formset.formset.forms):
        posted[f"{prefix}-{i}-id"] = str(form.instance.pk)
        posted[f"{prefix}-{i}-session"] = str(session.pk)
    url = reverse("admin:sessions_app_chatsession_change", args=[session.pk])
    assert staff_browser.post(url, posted).status_code == 302
    session.refresh_from_db()
    assert session.title == "renamed"
    assert session.summaries.count() == SUMMARY_ROWS_INLINE + 3


def test_session_edit_keeps_the_summary_chain(staff_browser):
    session = ChatSessionFactory(title="old title")
    episode = EpisodeFactory(session=session)
    summary = SummaryFactory(session=session, first_episode_id=episode.pk, last_episode_id=episode.pk)
    url = reverse("admin:sessions_app_chatsession_change", args=[session.pk])
    response = staff_browser.post(
        url,
        {
            "title": "new title",
            "metadata": "{}",
            "summaries-TOTAL_FORMS": "1",
            "summaries-INITIAL_FORMS": "1",
            "summaries-MIN_NUM_FORMS": "0",
            "summaries-MAX_NUM_FORMS": "1000",
            "summaries-0-id": str(summary.pk),
            "summaries-0-session": str(session.pk),
        },
    )
    assert response.status_code == 302
    session.refresh_from_db()
    summary.refresh_from_db()
    assert session.title == "new title"
    assert summary.content and not summary.curated


# --- episodes --------------------------------------------------------------------------


def test_episode_list_query_count_does_not_grow(staff_browser):
    make_sessions(2, episodes_each=3)
    small = page_queries(staff_browser, EPISODES_URL)
    make_sessions(10, episodes_each=5)
    large = page_queries(staff_browser, EPISODES_URL)
    assert len(small) == len(large)


def test_episode_list_does_not_load_full_texts(staff_browser):
    session = ChatSessionFactory()
    long_input = "question " * 600 + "INPUT-TAIL-MARKER"
    long_response = "answer " * 800 + "RESPONSE-TAIL-MARKER"
    EpisodeFactory(session=session, user_input=long_input, response=long_response)
    response = staff_browser.get(EPISODES_URL)
    (row,) = response.context["cl"].result_list
    assert {"user_input", "response"} <= row.get_deferred_fields()
    html = response.content.decode()
    assert "INPUT-TAIL-MARKER" not in html and "RESPONSE-TAIL-MARKER" not in html
    assert "question question" in html and "…" in html


def test_episode_search_by_text(staff_browser):
    wanted = EpisodeFactory(user_input="How do rutabagas grow?", response="Slowly.")
    in_reply = EpisodeFactory(user_input="Anything else?", response="Rutabagas, again.")
    EpisodeFactory(user_input="Unrelated", response="Nothing here.")
    cl = staff_browser.get(EPISODES_URL, {"q": "rutabaga"}).context["cl"]
    assert {e.pk for e in cl.result_list} == {wanted.pk, in_reply.pk}


def test_episode_filter_by_session(staff_browser):
    session = ChatSessionFactory()
    mine = EpisodeFactory.create_batch(2, session=session)
    EpisodeFactory.create_batch(2)
    cl = staff_browser.get(EPISODES_URL, {"session": str(session.uuid)}).context["cl"]
    assert {e.pk for e in cl.result_list} == {e.pk for e in mine}
    assert list(staff_browser.get(EPISODES_URL, {"session": "not-a-uuid"}).context["cl"].result_list) == []


def test_episode_filter_by_session_and_id_range(staff_browser):
    session = ChatSessionFactory()
    episodes = EpisodeFactory.create_batch(5, session=session)
    params = {"session": str(session.uuid), "id__gte": episodes[1].pk, "id__lte": episodes[3].pk}
    cl = staff_browser.get(EPISODES_URL, params).context["cl"]
    assert sorted(e.pk for e in cl.result_list) == [e.pk for e in episodes[1:4]]


def test_episodes_are_read_only(staff_browser):
    episode = EpisodeFactory(user_input="original question", response="original answer")
    change_url = reverse("admin:sessions_app_episode_change", args=[episode.pk])
    page = staff_browser.get(change_url)
    assert page.status_code == 200
    assert "original question" in page.content.decode()
    assert 'name="user_input"' not in page.content.decode()
    assert staff_browser.get(reverse("admin:sessions_app_episode_add")).status_code == 403
    assert staff_browser.post(change_url, {"user_input": "x", "response": "y"}).status_code == 403
    delete_url = reverse("admin:sessions_app_episode_delete", args=[episode.pk])
    assert staff_browser.post(delete_url, {"post": "yes"}).status_code == 403
    assert Episode.objects.get(pk=episode.pk).user_input == "original question"
    assert staff_browser.get(EPISODES_URL).context["action_form"] is None  # not even "delete selected"


def test_session_list_shows_whose_memory_and_filters_by_scope(staff_browser):
    shared = ChatSessionFactory(title="Shared one", end_user="cust-7", memory_scope="shared")
    ChatSessionFactory(title="Alone one")
    page = staff_browser.get(SESSIONS_URL, {"memory_scope__exact": "shared"}).content.decode()
    assert "Shared one" in page and "cust-7" in page
    assert "Alone one" not in page
    found = staff_browser.get(SESSIONS_URL, {"q": "cust-7"}).content.decode()
    assert str(shared) in found and "Alone one" not in found
