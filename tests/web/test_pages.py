"""The server-rendered pages: sign-in, the session list, the chat window."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessions_app.models import ChatSession
from summaries.models import SummarizationState
from summaries.pages import HISTORY_PAGE_SIZE
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owner_web(owner) -> Client:
    return client_for(owner)


@pytest.fixture
def other_web(other_user) -> Client:
    return client_for(other_user)


@pytest.fixture
def staff_web(staff_user) -> Client:
    return client_for(staff_user)


def chat_url(session: ChatSession) -> str:
    return reverse("session-chat", args=[session.uuid])


# --- sign in / out ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/sessions/00000000-0000-0000-0000-000000000000/"])
def test_pages_require_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


def test_chat_page_of_a_real_session_requires_login(client, owner):
    session = ChatSessionFactory(owner=owner)
    response = client.get(chat_url(session))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_sign_in_then_out(client, owner):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b'name="csrfmiddlewaretoken"' in page.content

    response = client.post(reverse("login"), {"username": "owner", "password": "correct-horse-battery"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200

    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_is_shown(client, owner):
    response = client.post(reverse("login"), {"username": "owner", "password": "nope"})
    assert response.status_code == 200
    assert b"alert-error" in response.content


def test_forms_are_csrf_protected(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/", {"title": "No token"})
    assert response.status_code == 403
    assert not ChatSession.objects.filter(title="No token").exists()


# --- session list ----------------------------------------------------------


def test_list_shows_own_sessions_with_stats(owner_web, owner, other_user):
    mine = ChatSessionFactory(owner=owner, title="Trip planning")
    EpisodeFactory.create_batch(3, session=mine)
    ChatSessionFactory(owner=other_user, title="Someone else's")
    mine.refresh_from_db()

    response = owner_web.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Trip planning" in html
    assert "Someone else&#x27;s" not in html and "Someone else's" not in html
    row = response.context["sessions"][0]
    assert row.episode_count == 3
    assert row.total_tokens == mine.cached_total_tokens > 0
    assert "<strong>3</strong> exchanges" in html
    assert f"<strong>{row.total_tokens}</strong> tokens" in html


def test_list_empty_state(owner_web):
    response = owner_web.get("/")
    assert b"No sessions yet" in response.content


def test_staff_list_shows_other_owners(staff_web, owner):
    ChatSessionFactory(owner=owner, title="Owner's session")
    html = staff_web.get("/").content.decode()
    assert "Owner&#x27;s session" in html
    assert "owner owner" in html


def test_list_is_one_query_however_many_sessions(owner_web, owner):
    def session_queries() -> list[str]:
        with CaptureQueriesContext(connection) as ctx:
            assert owner_web.get("/").status_code == 200
        return [q["sql"] for q in ctx.captured_queries]

    ChatSessionFactory(owner=owner)
    few = session_queries()
    for _ in range(6):
        EpisodeFactory.create_batch(2, session=ChatSessionFactory(owner=owner))
    many = session_queries()

    assert len(few) == len(many)
    touching = [sql for sql in many if "sessions_app_" in sql]
    assert len(touching) == 1, touching


def test_create_session(owner_web, owner):
    response = owner_web.post("/", {"title": "  Fresh start  "})
    session = ChatSession.objects.get(owner=owner)
    assert session.title == "Fresh start"
    assert response.status_code == 302
    assert response["Location"] == chat_url(session)


def test_create_session_without_title(owner_web, owner):
    owner_web.post("/", {"title": ""})
    assert ChatSession.objects.get(owner=owner).title == ""


def test_create_session_rejects_long_title(owner_web, owner):
    owner_web.post("/", {"title": "x" * 201})
    assert not ChatSession.objects.filter(owner=owner).exists()


def test_rename(owner_web, owner):
    session = ChatSessionFactory(owner=owner, title="Old")
    response = owner_web.post(reverse("session-rename", args=[session.uuid]), {"title": "New"})
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.title == "New"


def test_rename_follows_only_local_next(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    url = reverse("session-rename", args=[session.uuid])
    local = owner_web.post(url, {"title": "A", "next": chat_url(session)})
    assert local["Location"] == chat_url(session)
    foreign = owner_web.post(url, {"title": "B", "next": "https://evil.example/"})
    assert foreign["Location"] == "/"


def test_delete_asks_then_deletes(owner_web, owner):
    session = ChatSessionFactory(owner=owner, title="Doomed")
    EpisodeFactory(session=session)
    url = reverse("session-delete", args=[session.uuid])
    page = owner_web.get(url)
    assert page.status_code == 200
    assert "Delete “Doomed”?" in page.content.decode()
    assert ChatSession.objects.filter(pk=session.pk).exists()

    response = owner_web.post(url)
    assert response.status_code == 302
    assert not ChatSession.objects.filter(pk=session.pk).exists()


def test_other_users_cannot_touch_a_session(other_web, owner):
    session = ChatSessionFactory(owner=owner, title="Private")
    assert other_web.get(chat_url(session)).status_code == 404
    assert (
        other_web.post(reverse("session-rename", args=[session.uuid]), {"title": "Mine"}).status_code == 404
    )
    assert other_web.get(reverse("session-delete", args=[session.uuid])).status_code == 404
    assert other_web.post(reverse("session-delete", args=[session.uuid])).status_code == 404
    session.refresh_from_db()
    assert session.title == "Private"


def test_staff_can_open_any_session(staff_web, owner):
    session = ChatSessionFactory(owner=owner)
    assert staff_web.get(chat_url(session)).status_code == 200


# --- chat page -------------------------------------------------------------


def test_chat_page_renders_history_oldest_first(owner_web, owner):
    session = ChatSessionFactory(owner=owner, title="History")
    first = EpisodeFactory(session=session, user_input="first question", response="first answer")
    second = EpisodeFactory(session=session, user_input="second question", response="second answer")
    response = owner_web.get(chat_url(session))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("first question") < html.index("first answer") < html.index("second question")
    assert f'data-episode-id="{first.pk}"' in html and f'data-episode-id="{second.pk}"' in html
    config = response.context["chat_config"]
    assert config["hasEarlier"] is False
    assert config["urls"]["chat"] == f"/api/sessions/{session.uuid}/chat/"
    assert config["urls"]["status"] == f"/api/sessions/{session.uuid}/summary-status/"


def test_chat_page_empty_state(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    html = owner_web.get(chat_url(session)).content.decode()
    assert "A new conversation" in html
    assert "No summaries yet" in html


def test_chat_page_shows_summary_cards(owner_web, owner):
    # Another session's episodes come first, so ids and positions differ.
    EpisodeFactory.create_batch(5, session=ChatSessionFactory(owner=owner))
    session = ChatSessionFactory(owner=owner)
    episodes = EpisodeFactory.create_batch(4, session=session)
    SummaryFactory(
        session=session,
        content="They planned a trip.",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[2].pk,
        curated=True,
    )
    html = owner_web.get(chat_url(session)).content.decode()
    # Cards and messages read positions in the session, never global ids.
    assert '<h3 class="summary-range">Exchanges 1–3</h3>' in html
    assert f"{episodes[0].pk}–{episodes[2].pk}" not in html
    assert '<p class="msg-meta">#4 · ' in html and f"#{episodes[3].pk} · " not in html
    assert "They planned a trip." in html
    assert "curated-mark" in html


def test_chat_page_caps_history_and_links_earlier_page(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    episodes = EpisodeFactory.create_batch(HISTORY_PAGE_SIZE + 5, session=session)
    response = owner_web.get(chat_url(session))
    shown = [int(x) for x in re.findall(r'data-episode-id="(\d+)"', response.content.decode())]
    assert shown == [e.pk for e in episodes[-HISTORY_PAGE_SIZE:]]
    config = response.context["chat_config"]
    assert config["hasEarlier"] is True

    # The link is the API's own cursor: it answers the five episodes before
    # the first one shown, oldest first, and nothing earlier is left.
    page = owner_web.get(config["earlierUrl"], HTTP_ACCEPT="application/json")
    assert page.status_code == 200, page.content
    data = page.json()
    assert [e["id"] for e in data["results"]] == [e.pk for e in episodes[:5]]
    assert data["previous"] is None


def test_earlier_cursor_pages_back_in_steps(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    episodes = EpisodeFactory.create_batch(2 * HISTORY_PAGE_SIZE + 3, session=session)
    url = owner_web.get(chat_url(session)).context["chat_config"]["earlierUrl"]
    seen: list[int] = []
    while url:
        data = owner_web.get(url).json()
        seen = [e["id"] for e in data["results"]] + seen
        url = data["previous"]
    assert seen == [e.pk for e in episodes[:-HISTORY_PAGE_SIZE]]


def test_chat_page_escapes_user_and_model_text(owner_web, owner):
    session = ChatSessionFactory(owner=owner, title="<b>bold</b>")
    episode = EpisodeFactory(
        session=session,
        user_input="<script>window.pwned=1</script>",
        response='<img src=x onerror="alert(1)">',
    )
    SummaryFactory(
        session=session,
        content="<script>alert(2)</script>",
        first_episode_id=episode.pk,
        last_episode_id=episode.pk,
    )
    html = owner_web.get(chat_url(session)).content.decode()
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "<script>alert(2)" not in html
    assert "<b>bold</b>" not in html


def test_pages_send_a_content_security_policy(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    for url in ["/", chat_url(session), reverse("login")]:
        policy = owner_web.get(url)["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        # Our own files only: no inline script or style, nothing from elsewhere.
        assert directives["script-src"] == directives["style-src"] == "'self'", policy
        assert (directives["object-src"], directives["frame-ancestors"]) == ("'none'", "'none'"), policy


def test_unknown_session_is_404(owner_web):
    assert owner_web.get("/sessions/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert owner_web.get("/sessions/not-a-uuid/").status_code == 404


def test_chat_page_renders_the_summarization_state(owner_web, owner):
    session = ChatSessionFactory(owner=owner)
    state = SummarizationState.objects.create(session=session, state=SummarizationState.State.RUNNING)
    html = owner_web.get(chat_url(session)).content.decode()
    assert '<span class="summary-indicator" id="header-indicator" >' in html
    assert 'id="header-failed" hidden' in html

    state.state = SummarizationState.State.FAILED
    state.last_error = "<b>model</b> unreachable"
    state.save()
    response = owner_web.get(chat_url(session))
    html = response.content.decode()
    assert 'id="header-indicator" hidden' in html
    assert 'id="summary-error" hidden' not in html
    # The owner reads a sentence, not the stored error (which names model servers); staff
    # read the error itself, escaped.
    assert "Summarization failed; it is tried again later." in html
    assert "model</b>" not in html and "&lt;b&gt;model" not in html
    assert response.context["chat_config"]["status"]["state"] == "failed"
    staff = Client()
    staff.force_login(UserFactory(username="staff-reader", is_staff=True, is_superuser=True))
    staff_html = staff.get(chat_url(session)).content.decode()
    assert "&lt;b&gt;model&lt;/b&gt; unreachable" in staff_html and "<b>model</b>" not in staff_html


def visible_text(html: str) -> str:
    """What a person reads of a page: its text, without tags, attributes, scripts or comments."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []
            self.hidden = 0

        def handle_starttag(self, tag, attrs) -> None:
            if tag in ("script", "style"):
                self.hidden += 1

        def handle_endtag(self, tag) -> None:
            if tag in ("script", "style"):
                self.hidden -= 1

        def handle_data(self, data) -> None:
            if not self.hidden:
                self.parts.append(data)

    reader = Reader()
    reader.feed(html)
    return " ".join(" ".join(reader.parts).split())


def test_session_pages_speak_of_exchanges_not_episodes(owner_web, owner):
    session = ChatSessionFactory(owner=owner, title="Garden")
    EpisodeFactory.create_batch(3, session=session)
    SummarizationState.objects.create(session=session, state=SummarizationState.State.IDLE)
    single = ChatSessionFactory(owner=owner, title="Once")
    EpisodeFactory(session=single)

    chat = visible_text(owner_web.get(chat_url(session)).content.decode())
    assert "3 exchanges ·" in chat
    assert "1 exchange ·" in visible_text(owner_web.get(chat_url(single)).content.decode())
    listing = visible_text(owner_web.get("/").content.decode())
    assert "3 exchanges" in listing and "1 exchange " in listing
    delete = visible_text(owner_web.get(reverse("session-delete", args=[session.uuid])).content.decode())
    assert "Its 3 exchanges and all of its summaries will be deleted." in delete
    for text in (chat, listing, delete):
        assert "episode" not in text.lower()
