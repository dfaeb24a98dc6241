"""Per-user export (``GET /api/me/export/``, ``export_user``) and its import round trip."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

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
    assert lines[0]["format"] == "nexus-transcript/2"
    assert [line["position"] for line in lines if "user_input" in line] == [1, 2, 3, 4, 5, 1]
    summaries = [line for line in lines if line.get("type") == "summary"]
    assert [(s["first_index"], s["last_index"], s["curated"]) for s in summaries] == [(0, 1, False), (2, 3, True)]
    assert {"content", "first_index", "last_index", "curated"} <= set(summaries[0])
    assert [(s["first_position"], s["last_position"]) for s in summaries] == [(1, 2), (3, 4)]
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
        fields = ("position", "user_input", "response", "metadata", "created_at", "token_count")
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


def _import(tmp_path, text: str, owner: str = "owner") -> list[ChatSession]:
    path = tmp_path / "memory.jsonl"
    path.write_text(text)
    call_command("import_transcript", str(path), "--owner", owner, stdout=io.StringIO())
    return list(ChatSession.objects.filter(owner__username=owner).order_by("pk"))


def test_export_carries_positions_with_their_gaps_and_the_import_numbers_anew(owner, other_user, tmp_path):
    session = ChatSessionFactory(owner=owner, title="Gappy")
    eps = EpisodeFactory.create_batch(5, session=session)
    eps[1].delete()
    SummaryFactory(session=session, content="Row.", first_episode_id=eps[2].pk, last_episode_id=eps[4].pk)
    out = io.StringIO()
    call_command("export_user", "owner", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["position"] for line in lines if "user_input" in line] == [1, 3, 4, 5]
    (row,) = [line for line in lines if line.get("type") == "summary"]
    assert (row["first_index"], row["last_index"]) == (1, 3)
    assert (row["first_position"], row["last_position"]) == (3, 5)

    (copy,) = _import(tmp_path, out.getvalue(), owner="other")
    # Positions in the file are informational: the copy counts from 1, in line order, with no gap.
    assert list(Episode.objects.for_session(copy.pk).values_list("position", flat=True)) == [1, 2, 3, 4]
    assert ChatSession.objects.get(pk=copy.pk).cached_last_position == 4
    assert Summary.objects.get(session=copy).exchanges == "Exchanges 2–4"


def test_import_reads_version_1_files_without_positions(owner, tmp_path):
    (session,) = _import(
        tmp_path,
        '{"type": "session", "format": "nexus-transcript/1", "title": "Old"}\n'
        '{"user_input": "first", "response": "a"}\n'
        '{"user_input": "second", "response": "b"}\n'
        '{"user_input": "third", "response": "c"}\n'
        '{"type": "summary", "content": "Two.", "first_index": 0, "last_index": 1}\n',
    )
    numbered = list(Episode.objects.for_session(session.pk).values_list("user_input", "position"))
    assert numbered == [("first", 1), ("second", 2), ("third", 3)]
    assert Summary.objects.get(session=session).exchanges == "Exchanges 1–2"


def test_import_ignores_positions_in_the_file(owner, tmp_path):
    (session,) = _import(
        tmp_path,
        '{"type": "session", "format": "nexus-transcript/2", "title": "New"}\n'
        '{"position": 7, "user_input": "first", "response": "a"}\n'
        '{"position": 3, "user_input": "second", "response": "b"}\n'
        '{"position": "not even a number", "user_input": "third", "response": "c"}\n',
    )
    numbered = list(Episode.objects.for_session(session.pk).values_list("user_input", "position"))
    assert numbered == [("first", 1), ("second", 2), ("third", 3)]


def test_import_refuses_a_format_it_does_not_know(owner, tmp_path):
    path = tmp_path / "future.jsonl"
    path.write_text(
        '{"type": "session", "format": "nexus-transcript/3", "title": "x"}\n'
        '{"user_input": "a", "response": "b"}\n'
    )
    err = io.StringIO()
    with pytest.raises(Exception, match="1 bad line"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err)
    assert err.getvalue().startswith("line 1: unknown \"format\" 'nexus-transcript/3'")
    assert not ChatSession.objects.exists()


def test_whose_memory_round_trips(owner, other_user, tmp_path):
    original = ChatSessionFactory(owner=owner, title="Shared", end_user="cust-9", memory_scope="shared")
    EpisodeFactory(session=original)
    path = tmp_path / "memory.jsonl"
    call_command("export_user", "owner", "--output", str(path), stderr=io.StringIO())
    header = json.loads(path.read_text().splitlines()[0])
    assert (header["end_user"], header["memory_scope"]) == ("cust-9", "shared")
    call_command("import_transcript", str(path), "--owner", "other", stdout=io.StringIO())
    copy = ChatSession.objects.get(owner=other_user)
    assert (copy.end_user, copy.memory_scope) == ("cust-9", "shared")


@pytest.mark.parametrize(
    ("fields", "named"),
    [('"memory_scope": "everyone"', "memory_scope"), ('"end_user": "' + "x" * 201 + '"', "end_user")],
)
def test_import_refuses_a_bad_end_user_or_scope_by_name(owner, tmp_path, fields, named):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"type": "session", "format": "nexus-transcript/2", "title": "x", ' + fields + "}\n"
        '{"user_input": "a", "response": "b"}\n'
    )
    err = io.StringIO()
    with pytest.raises(Exception, match="1 bad line"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err)
    assert err.getvalue().startswith(f'line 1: "{named}"')
    assert not ChatSession.objects.exists()


# --- an export that fails ---------------------------------------------------------


def _failing_after(sessions_ok: int, monkeypatch) -> None:
    """The database drops the connection when the export reaches session
    number ``sessions_ok + 1`` (fault injected where the export reads it)."""
    from django.db import OperationalError

    from summaries import transfer

    real = transfer.export_lines
    seen: list[int] = []

    def export_lines(session, **kwargs):
        seen.append(session.pk)
        if len(seen) > sessions_ok:
            raise OperationalError("server closed the connection unexpectedly")
        yield from real(session, **kwargs)

    monkeypatch.setattr(transfer, "export_lines", export_lines)


def test_an_export_failing_before_its_first_line_is_a_json_503(api_client, owner, monkeypatch):
    _memory(owner)
    _failing_after(0, monkeypatch)
    response = api_client.get("/api/me/export/")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert "Retry-After" in response and "detail" in response.json()


def test_an_export_failing_midway_ends_with_an_error_line_the_importer_refuses(
    api_client, owner, monkeypatch, tmp_path
):
    _memory(owner)
    _failing_after(1, monkeypatch)
    response = api_client.get("/api/me/export/")
    assert response.status_code == 200
    lines = _lines(response)
    assert lines[-1]["type"] == "error" and "incomplete" in lines[-1]["detail"]
    assert [line["title"] for line in lines if line.get("type") == "session"] == ["First"]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    before = ChatSession.objects.count()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=io.StringIO())
    assert ChatSession.objects.count() == before
