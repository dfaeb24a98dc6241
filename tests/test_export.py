"""Per-user export (``GET /api/me/export/``, ``export_user``) and its import round trip."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from sessions_app.models import ChatSession, Episode
from summaries.models import SummarizationState, Summary
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


def _memory(owner) -> list[ChatSession]:
    first = ChatSessionFactory(owner=owner, title="First", metadata={"lang": "de"})
    eps = [EpisodeFactory(session=first, user_input=f"Frage {i} über Zürich?") for i in range(4)]
    # What the API takes but the importer used to refuse: a blank input, an empty reply.
    eps.append(EpisodeFactory(session=first, user_input="   ", response=""))
    SummaryFactory(session=first, content="Auto row.", first_episode_id=eps[0].pk, last_episode_id=eps[1].pk)
    SummaryFactory(session=first, content="Curated row.", first_episode_id=eps[2].pk,
                   last_episode_id=eps[3].pk, curated=True)  # fmt: skip
    second = ChatSessionFactory(owner=owner, title="Second")
    EpisodeFactory(session=second, metadata={"n": 1})
    return [first, second]


def _lines(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def test_export_streams_json_lines_whatever_the_accept_header(api_client, owner, other_user, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    _memory(owner)
    ChatSessionFactory(owner=other_user, title="Not yours")
    response = api_client.get("/api/me/export/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = _lines(response)
    kinds = [line.get("type", "episode") for line in lines]
    assert kinds == ["session", *["episode"] * 5, "summary", "summary", "session", "episode"]
    assert [line["title"] for line in lines if line.get("type") == "session"] == ["First", "Second"]
    assert lines[0]["format"] == "nexus-transcript/1"
    summaries = [line for line in lines if line.get("type") == "summary"]
    assert [(s["first_index"], s["last_index"], s["curated"]) for s in summaries] == [(0, 1, False), (2, 3, True)]
    assert {"content", "first_index", "last_index", "curated"} <= set(summaries[0])
    assert all("created_at" in line for line in lines if "user_input" in line)


def test_export_needs_a_login(anon_client):
    response = anon_client.get("/api/me/export/", HTTP_ACCEPT="text/html")
    assert response.status_code in (401, 403)
    assert response["Content-Type"].startswith("application/json")


def test_export_user_round_trips_everything(owner, other_user, tmp_path, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    originals = _memory(owner)
    path = tmp_path / "memory.jsonl"
    call_command("export_user", "owner", "--output", str(path), stderr=io.StringIO())
    api_lines = io.StringIO()
    call_command("export_user", "owner", stdout=api_lines)
    assert api_lines.getvalue() == path.read_text()

    out = io.StringIO()
    call_command("import_transcript", str(path), "--owner", "other", stdout=out)
    assert "2 sessions" in out.getvalue()
    copies = list(ChatSession.objects.filter(owner=other_user).order_by("pk"))
    assert [(c.title, c.metadata) for c in copies] == [(o.title, o.metadata) for o in originals]
    for original, copy in zip(originals, copies, strict=True):
        fields = ("user_input", "response", "metadata", "created_at", "token_count")
        assert list(Episode.objects.for_session(copy.pk).values_list(*fields)) == list(
            Episode.objects.for_session(original.pk).values_list(*fields)
        )
        ids = list(Episode.objects.for_session(copy.pk).values_list("pk", flat=True))
        old_ids = list(Episode.objects.for_session(original.pk).values_list("pk", flat=True))
        rows = [(ids.index(s.first_episode_id), ids.index(s.last_episode_id), s.content, s.curated)
                for s in Summary.objects.chain(copy.pk)]  # fmt: skip
        old_rows = [(old_ids.index(s.first_episode_id), old_ids.index(s.last_episode_id), s.content, s.curated)
                    for s in Summary.objects.chain(original.pk)]  # fmt: skip
        assert rows == old_rows
    # The copy's coverage counts the imported rows, so nothing is summarized twice.
    state = SummarizationState.objects.get(session=copies[0])
    assert state.covered_episodes == 4


def test_import_refuses_summary_lines_that_do_not_fit(owner, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"type": "session", "format": "nexus-transcript/1", "title": "x"}\n'
        '{"user_input": "a", "response": ""}\n'
        '{"type": "summary", "content": "c", "first_index": 0, "last_index": 3, "curated": true}\n'
        '{"type": "summary", "content": "", "first_index": 0, "last_index": 0}\n'
        '{"user_input": "", "response": "b"}\n'
    )
    err = io.StringIO()
    with pytest.raises(Exception, match="3 bad lines"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err)
    assert [line.split(":")[0] for line in err.getvalue().splitlines()] == ["line 3", "line 4", "line 5"]
    assert not ChatSession.objects.exists()
