"""What ``import_transcript`` refuses, and how: every problem named by its
line, as a ``CommandError`` (one message, no traceback), and nothing stored.

The date that started this: ``0001-01-01T00:00:00+14:00`` is 31 December of
1 BC in UTC. PostgreSQL stored it, and afterwards the owner's session list,
search and export failed on reading it back; SQLite failed at the write
with a traceback.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db

GOOD = '{"user_input": "We planted tomatoes.", "response": "Noted.", "created_at": "2023-05-08T09:00:00Z"}'


def _import(tmp_path, *lines: str) -> str:
    """Run the importer on ``lines``; the ``CommandError`` it must raise, with what it wrote to stderr."""
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(lines) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported") as refused:
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err)
    return f"{err.getvalue()}{refused.value}"


def test_a_date_before_year_1_in_utc_is_refused_by_its_line_and_the_owners_reads_still_work(
    owner, api_client, tmp_path
):
    said = _import(
        tmp_path,
        '{"type": "session", "format": "nexus-transcript/2", "title": "Garden"}',
        GOOD,
        '{"user_input": "When?", "response": "Long ago.", "created_at": "0001-01-01T00:00:00+14:00"}',
    )
    assert 'line 3: "created_at": Must not be before 1970-01-01T00:00:00Z.' in said
    assert not ChatSession.objects.exists()
    assert api_client.get("/api/sessions/").status_code == 200
    assert api_client.get("/api/search/", {"q": "tomatoes"}).status_code == 200
    export = api_client.get("/api/me/export/")
    assert export.status_code == 200 and b"".join(export.streaming_content) == b""


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        ("1969-12-31T23:59:59Z", "Must not be before 1970-01-01T00:00:00Z."),
        ("0001-01-01T00:00:00", "Must not be before 1970-01-01T00:00:00Z."),
        ("9999-12-31T23:59:59-14:00", "Must not be in the future."),
        ("2023-05-01T09:00:00Z", "Must not be earlier than the episode before it."),
    ],
)
def test_each_date_the_api_refuses_is_refused_by_its_line(owner, tmp_path, when, problem):
    said = _import(tmp_path, GOOD, f'{{"user_input": "Later?", "response": "Yes.", "created_at": "{when}"}}')
    assert f'line 2: "created_at": {problem}' in said
    assert not ChatSession.objects.exists()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"type": "session", "format": ["nexus-transcript/2"]}', "line 1: unknown \"format\" ['nexus-"),
        ('{"type": "session", "format": 2}', 'line 1: unknown "format" 2: this version reads nexus-'),
        ('{"type": "session", "title": "Gar\\u0000den"}', 'line 1: "title": Null characters are not'),
        (
            '{"user_input": "a", "response": "b", "created_at": "2023-13-01T00:00:00Z"}',
            'line 1: "created_at" must be an ISO 8601 date and time',
        ),
        ("[" * 100_000 + "]" * 100_000, "line 1: not valid JSON (nested too deeply)"),
        ('{"user_input": "a", "response": "b", "metadata": {"n": ' + "9" * 5000 + "}}", "line 1: not valid"),
    ],
)
def test_input_that_used_to_end_in_a_traceback_is_refused_by_its_line(owner, tmp_path, line, problem):
    said = _import(tmp_path, line, GOOD)
    assert problem in said
    assert not ChatSession.objects.exists()


def test_a_good_file_after_all_that_is_stored(owner, tmp_path):
    path = tmp_path / "garden.jsonl"
    path.write_text(GOOD.replace("2023-05-08T09:00:00Z", "1970-01-01T00:00:00Z") + "\n" + GOOD + "\n")
    call_command("import_transcript", str(path), "--owner", "owner", stdout=io.StringIO())
    assert ChatSession.objects.get().cached_episode_count == 2
