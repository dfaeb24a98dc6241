"""Production readiness: deploy checks, /healthz, JSON logs, usage reporting,
and moving sessions in and out as JSON lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import ChatSession, Episode
from summaries.models import SummaryRevision
from tests import process_support
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UtilityCallFactory
from tests.process_support import env_without, free_port, run_python

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db

PRODUCTION_SECRET = "p7Kq2vXw9LmZr4Tn8YbHc3Jd6Fs1Ag5Ue0Oi_Ry-Wt" + "Vx2Bn7Mk4Lq"


def manage(*args: str, **env_overrides: str) -> subprocess.CompletedProcess:
    """Run manage.py in a clean environment: only what the test sets."""
    env = env_without("SUMMARY_", "DJANGO_", "CELERY_", "LOG_", "INFERENCE_")
    env.pop("DATABASE_URL", None)
    env.update(env_overrides)
    return run_python("manage.py", *args, env=env)


PRODUCTION_ENV = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": PRODUCTION_SECRET,
    "DJANGO_ALLOWED_HOSTS": "nexus.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://nexus.example.com",
    "DJANGO_BEHIND_PROXY": "1",
}


# --- check --deploy ------------------------------------------------------------


def test_deploy_check_is_clean_under_production_settings():
    assert len(PRODUCTION_SECRET) >= 50
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_deploy_check_complains_when_https_switches_are_off():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        **PRODUCTION_ENV,
        DJANGO_SECURE_HSTS_SECONDS="0",
        DJANGO_SESSION_COOKIE_SECURE="0",
    )
    assert result.returncode != 0
    assert "security.W004" in result.stderr
    assert "security.W012" in result.stderr


def test_production_refuses_to_start_without_a_secret():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_SECRET_KEY"}
    result = manage("check", "--deploy", **env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_settings_trust_the_proxy_and_use_hashed_static_files():
    code = (
        "from django.conf import settings as s; "
        "print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_TRUSTED_ORIGINS, s.STORAGES['staticfiles']['BACKEND'])"
    )
    result = manage("shell", "-c", code, **PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert "('HTTP_X_FORWARDED_PROTO', 'https') True True ['https://nexus.example.com']" in result.stdout
    assert "whitenoise.storage.CompressedManifestStaticFilesStorage" in result.stdout


def test_debug_keeps_plain_http():
    code = (
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"
    )
    result = manage("shell", "-c", code, DJANGO_DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["False", "False", "0"]


# --- structured logs -----------------------------------------------------------

EMIT = """
import logging
import django
django.setup()
logging.getLogger("nexus.summarization").info(
    "summary attempt",
    extra={"session": "3f0c0d5e-1111-4222-8333-944445555666", "episode_range": "12-19",
           "prompt_tokens": 812, "completion_tokens": 143, "duration_ms": 2417,
           "outcome": "failed", "error": "timeout\\nafter 60s", "user_input": "my secret question"},
)
logging.getLogger("nexus.chat").info("chat turn", extra={"session": "s", "context_ms": 4, "model_ms": 900})
"""


def emit_logs(**env: str) -> list[str]:
    result = run_python(
        "-c",
        EMIT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "nexus.settings", "DJANGO_DEBUG": "1", **env},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr.splitlines()


def test_json_logs_one_line_per_record_with_every_extra_field():
    lines = emit_logs(LOG_FORMAT="json")
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert record["level"] == "INFO"
    assert record["logger"] == "nexus.summarization"
    assert record["message"] == "summary attempt"
    assert record["time"].endswith("+00:00")
    assert record["session"] == "3f0c0d5e-1111-4222-8333-944445555666"
    assert record["episode_range"] == "12-19"
    assert (record["prompt_tokens"], record["completion_tokens"], record["duration_ms"]) == (812, 143, 2417)
    assert record["outcome"] == "failed"
    assert record["error"] == "timeout\nafter 60s"
    chat = json.loads(lines[1])
    assert (chat["logger"], chat["context_ms"], chat["model_ms"]) == ("nexus.chat", 4, 900)


def test_user_text_stays_out_of_logs_unless_allowed():
    hidden = json.loads(emit_logs(LOG_FORMAT="json")[0])
    assert hidden["user_input"] == "[redacted]"
    shown = json.loads(emit_logs(LOG_FORMAT="json", LOG_CONTENT="1")[0])
    assert shown["user_input"] == "my secret question"


def test_plain_logs_by_default():
    lines = emit_logs()
    assert lines[0].endswith("INFO nexus.summarization summary attempt")
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0])


SERVER_LINE = """
import logging
import django
django.setup()
logging.getLogger("django.server").info(
    '"%s" %s %s', "GET /api/search/?q=zanzibar HTTP/1.1", "200", "14"
)
"""


@pytest.mark.parametrize(("log_content", "shown"), [("", False), ("1", True)])
def test_development_server_lines_keep_the_query_only_with_log_content(log_content, shown):
    result = run_python(
        "-c", SERVER_LINE,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "nexus.settings", "DJANGO_DEBUG": "1",
             "LOG_CONTENT": log_content},
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "GET /api/search/?" in result.stderr and "HTTP/1.1" in result.stderr
    assert ("zanzibar" in result.stderr) is shown


def test_gunicorn_access_lines_are_json_without_query_strings():
    import logging

    from nexus.logging import JsonFormatter

    atoms = {
        "m": "GET",
        "U": "/api/sessions/x/context/",
        "s": "200",
        "M": 12,
        "h": "10.0.0.1",
        "q": "question=secret",
    }
    record = logging.LogRecord("gunicorn.access", logging.INFO, "", 0, "%(m)s %(U)s %(s)s", (atoms,), None)
    line = json.loads(JsonFormatter().format(record))
    assert (line["method"], line["path"], line["status"], line["duration_ms"]) == (
        "GET",
        "/api/sessions/x/context/",
        "200",
        12,
    )
    assert "secret" not in json.dumps(line)


# --- Procfile and gunicorn -------------------------------------------------------


def gunicorn_config(**env: str) -> dict:
    code = (
        "import json, runpy; c = runpy.run_path('nexus/gunicorn.conf.py'); "
        "print(json.dumps({k: v for k, v in c.items() if isinstance(v, (str, int, bool))}))"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PORT", "WEB_CONCURRENCY", "GUNICORN_BIND", "LOG_CONTENT"}
    }
    result = run_python("-c", code, env={**clean, **env}, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_gunicorn_config_for_two_cores_reads_port_and_concurrency():
    default = gunicorn_config()
    # The gthread worker, answering gunicorn's own errors in JSON (nexus.gunicorn_support).
    assert (default["workers"], default["worker_class"], default["threads"]) == (
        2, "nexus.gunicorn_support.JsonErrorWorker", 4,
    )  # fmt: skip
    from gunicorn.workers.gthread import ThreadWorker

    from nexus.gunicorn_support import JsonErrorWorker

    assert issubclass(JsonErrorWorker, ThreadWorker)
    assert default["bind"] == "0.0.0.0:8000"
    assert "%(q)s" not in default["access_log_format"]
    tuned = gunicorn_config(PORT="9123", WEB_CONCURRENCY="5", LOG_CONTENT="1")
    assert (tuned["bind"], tuned["workers"]) == ("0.0.0.0:9123", 5)
    assert "%(q)s" in tuned["access_log_format"]


def test_procfile_runs_web_worker_beat_and_mcp():
    entries = dict(
        line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip()
    )
    assert set(entries) == {"web", "worker", "beat", "mcp"}
    assert "manage.py mcp --http" in entries["mcp"]
    assert "gunicorn nexus.wsgi --config nexus/gunicorn.conf.py" in entries["web"]
    assert "celery -A nexus worker" in entries["worker"] and "--max-tasks-per-child" in entries["worker"]
    assert "--prefetch-multiplier 1" in entries["worker"]
    assert "celery -A nexus beat" in entries["beat"] and "--schedule" in entries["beat"]


# --- /healthz --------------------------------------------------------------------


own_redis = process_support.own_redis  # fixture: a redis-server of this test's own


def test_healthz_answers_200_with_a_report(client, settings):
    settings.INFERENCE_BACKEND = "offline"
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["failed"] == []
    assert set(body["checks"]) == {"database", "broker", "inference"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["broker"]["mode"] == "in-process"
    # The test process serves no web entry point, so it started no worker.
    assert body["checks"]["broker"]["worker"] == "not started"
    assert response["Cache-Control"].startswith("max-age=0")
    assert client.head("/healthz").status_code == 200  # load balancers often probe with HEAD
    assert client.post("/healthz").status_code == 405


def test_healthz_names_the_broker_when_redis_stops(client, settings, own_redis):
    settings.INFERENCE_BACKEND = "offline"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = own_redis.url
    up = client.get("/healthz")
    assert up.status_code == 200, up.content
    assert up.json()["checks"]["broker"]["ok"] is True
    assert up.json()["checks"]["broker"]["transport"] == "redis"

    own_redis.stop()
    down = client.get("/healthz")
    assert down.status_code == 503
    body = down.json()
    assert body["status"] == "fail"
    assert body["failed"] == ["broker"]
    assert body["checks"]["database"]["ok"] is True
    # Nothing about where the broker lives leaks to an unauthenticated caller.
    assert str(own_redis.port) not in down.content.decode()


def test_healthz_names_the_inference_backend_when_it_does_not_answer(client, settings):
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = f"http://127.0.0.1:{free_port()}"
    settings.INFERENCE_CONNECT_TIMEOUT_SECONDS = 1.0
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["inference"]
    assert "127.0.0.1" not in response.content.decode()


def test_healthz_names_the_database_when_it_fails(client, settings, monkeypatch):
    from nexus import health

    def broken() -> dict:
        raise health.CheckFailed("no database")

    settings.INFERENCE_BACKEND = "offline"
    monkeypatch.setitem(health.CHECKS, "database", broken)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["database"]
    assert response.json()["checks"]["database"]["error"] == "CheckFailed"


# --- usage reporting ---------------------------------------------------------------


@pytest.fixture
def usage_data(settings, owner, other_user):
    """Session A: 12 episodes, an automatic row over 1-6 (updated twice more by
    the model, edited once by staff) and a manual row over 7-8; four utility
    calls: a fresh one and an update that went into the row, a failed update
    and an answer dropped as stale. Session B: 3 episodes, no summaries, one
    failed call."""
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # no automatic pass may add rows here
    settings.CONTEXT_RECENT_EPISODES = 8
    a = ChatSessionFactory(owner=owner, title="long one")
    eps = [EpisodeFactory(session=a) for _ in range(12)]
    auto = SummaryFactory(
        session=a,
        content="auto",
        token_count=30,
        first_episode_id=eps[0].pk,
        last_episode_id=eps[5].pk,
        model="qwen2.5:1.5b",
        prompt_tokens=400,
        completion_tokens=60,
        duration_ms=900,
    )
    for source in ("automatic", "automatic", "staff_edit"):
        SummaryRevision.objects.create(
            summary=auto,
            source=source,
            content="older",
            token_count=5,
            first_episode_id=eps[0].pk,
            last_episode_id=eps[3].pk,
        )
    SummaryFactory(
        session=a,
        content="manual",
        token_count=10,
        first_episode_id=eps[6].pk,
        last_episode_id=eps[7].pk,
        model="",
        curated=True,
    )
    calls = [
        ("fresh", "ok", 300, 50, 700, auto),
        ("update", "transient_error", 0, 0, 120, None),
        ("update", "ok", 400, 60, 900, auto),  # the row keeps only this call's figures
        ("update", "dropped_stale", 200, 40, 500, None),
    ]
    for kind, outcome, sent, received, ms, row in calls:
        UtilityCallFactory(
            session=a,
            summary=row,
            kind=kind,
            outcome=outcome,
            prompt_tokens=sent,
            completion_tokens=received,
            duration_ms=ms,
            first_episode_id=eps[0].pk,
            last_episode_id=eps[5].pk,
        )
    b = ChatSessionFactory(owner=other_user, title="short one")
    b_eps = [EpisodeFactory(session=b) for _ in range(3)]
    UtilityCallFactory(
        session=b, outcome="permanent_error", first_episode_id=b_eps[0].pk, last_episode_id=b_eps[-1].pk
    )
    a.refresh_from_db()
    b.refresh_from_db()
    return {"a": a, "eps": eps, "b": b, "b_eps": b_eps}


def expected_a(data) -> dict:
    eps = data["eps"]
    full = sum(e.token_count for e in eps)
    context = 30 + 10 + sum(e.token_count for e in eps[4:])  # last 8 in full (5-12)
    return {"full": full, "context": context, "saved": full - context}


def test_usage_per_session_and_overall(staff_client, usage_data):
    response = staff_client.get("/api/usage/")
    assert response.status_code == 200
    body = response.json()
    want = expected_a(usage_data)
    rows = {row["session"]: row for row in body["sessions"]}
    a = rows[str(usage_data["a"].uuid)]
    # Every call, failed and dropped ones too; the staff edit is not a call.
    assert (a["utility_calls"], a["failed_calls"], a["dropped_calls"]) == (4, 1, 1)
    assert (a["prompt_tokens"], a["completion_tokens"], a["utility_duration_ms"]) == (900, 150, 2220)
    assert (a["episodes"], a["episodes_covered"], a["summary_rows"]) == (12, 8, 2)
    assert a["full_history_tokens"] == usage_data["a"].cached_total_tokens == want["full"]
    assert a["context_tokens"] == want["context"]
    assert a["saved_tokens"] == want["saved"] > 0
    assert a["savings_ratio"] == round(want["saved"] / want["full"], 4)

    b = rows[str(usage_data["b"].uuid)]
    b_full = sum(e.token_count for e in usage_data["b_eps"])
    assert (b["utility_calls"], b["failed_calls"], b["episodes_covered"], b["saved_tokens"]) == (1, 1, 0, 0)
    assert (b["prompt_tokens"], b["completion_tokens"]) == (0, 0)
    assert b["context_tokens"] == b["full_history_tokens"] == b_full

    totals = body["totals"]
    assert totals["sessions"] == 2
    assert (totals["utility_calls"], totals["failed_calls"], totals["dropped_calls"]) == (5, 2, 1)
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (900, 150)
    assert totals["calls_by_kind"] == {"fresh": 2, "update": 3, "regenerate": 0, "rebuild": 0, "notes": 0}
    assert totals["episodes"] == 15
    assert totals["full_history_tokens"] == want["full"] + b_full
    assert totals["saved_tokens"] == want["saved"]
    # Largest history first.
    assert body["sessions"][0]["session"] == str(usage_data["a"].uuid)


def test_usage_for_one_session_and_limit(staff_client, usage_data):
    one = staff_client.get("/api/usage/", {"session": str(usage_data["b"].uuid)}).json()
    assert [row["session"] for row in one["sessions"]] == [str(usage_data["b"].uuid)]
    assert one["totals"]["sessions"] == 1
    assert (one["totals"]["utility_calls"], one["totals"]["failed_calls"]) == (1, 1)
    limited = staff_client.get("/api/usage/", {"limit": 1}).json()
    assert len(limited["sessions"]) == 1
    assert limited["totals"]["sessions"] == 2
    assert staff_client.get("/api/usage/", {"limit": "many"}).status_code == 400
    assert staff_client.get("/api/usage/", {"session": "not-a-uuid"}).status_code == 404


def test_usage_is_staff_only(api_client, other_client, anon_client, usage_data):
    assert api_client.get("/api/usage/").status_code == 403
    assert other_client.get("/api/usage/").status_code == 403
    assert anon_client.get("/api/usage/").status_code in (401, 403)


def test_usage_queries_do_not_grow_with_sessions(staff_client, usage_data, django_assert_max_num_queries):
    for _ in range(5):
        EpisodeFactory(session=ChatSessionFactory())
    with django_assert_max_num_queries(6):
        assert staff_client.get("/api/usage/").status_code == 200


def test_usage_report_in_chunks_gives_the_same_figures(usage_data):
    from summaries.usage import usage_report

    for _ in range(3):
        EpisodeFactory(session=ChatSessionFactory())
    whole = usage_report(limit=50)
    chunked = usage_report(limit=50, chunk_size=1)
    assert chunked == whole
    assert usage_report(limit=2)["sessions"] == whole["sessions"][:2]
    assert whole["totals"]["sessions"] == 5


def test_usage_page_in_the_admin(client, staff_user, owner, usage_data):
    client.force_login(owner)
    assert client.get("/admin/usage/").status_code == 302  # not staff: to the admin login
    client.force_login(staff_user)
    page = client.get("/admin/usage/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Summarization usage" in html
    assert "long one" in html and "short one" in html
    assert f"<td>{expected_a(usage_data)['saved']}</td>" in html
    assert '<th scope="row">Failed calls</th><td>2</td>' in html
    one = client.get("/admin/usage/", {"session": str(usage_data["a"].uuid)})
    assert one.status_code == 200
    assert "short one" not in one.content.decode()
    assert client.get("/admin/usage/", {"session": "nope"}).status_code == 404
    index = client.get("/admin/").content.decode()
    assert 'href="/admin/usage/"' in index


# --- export_session / import_transcript -----------------------------------------


def export(session) -> list[dict]:
    out = io.StringIO()
    call_command("export_session", str(session.uuid), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_export_writes_a_header_and_one_line_per_episode(owner):
    session = ChatSessionFactory(owner=owner, title="Trip plans", metadata={"lang": "en"})
    eps = [EpisodeFactory(session=session, metadata={"n": i}) for i in range(3)]
    header, *lines = export(session)
    assert header["type"] == "session"
    assert header["id"] == str(session.uuid)
    assert (header["title"], header["owner"], header["metadata"]) == ("Trip plans", "owner", {"lang": "en"})
    assert header["episode_count"] == 3
    assert [line["user_input"] for line in lines] == [e.user_input for e in eps]
    assert [line["metadata"] for line in lines] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert header["format"] == "nexus-transcript/2"
    assert set(lines[0]) == {"position", "user_input", "response", "created_at", "metadata"}
    assert [line["position"] for line in lines] == [1, 2, 3]


def test_export_to_a_file_and_unknown_session(owner, tmp_path):
    session = ChatSessionFactory(owner=owner)
    EpisodeFactory(session=session)
    target = tmp_path / "out.jsonl"
    call_command("export_session", str(session.uuid), "--output", str(target), stderr=io.StringIO())
    assert len(target.read_text().splitlines()) == 2
    with pytest.raises(CommandError, match="No session"):
        call_command("export_session", "00000000-0000-4000-8000-000000000000")


def test_round_trip_keeps_every_episode_and_counts_tokens(owner, other_user, tmp_path, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    source = ChatSessionFactory(owner=owner, title="Original")
    eps = [EpisodeFactory(session=source, user_input=f"Frage {i} über Zürich?") for i in range(4)]
    path = tmp_path / "t.jsonl"
    call_command("export_session", str(source.uuid), "--output", str(path), stderr=io.StringIO())

    out = io.StringIO()
    call_command("import_transcript", str(path), "--owner", other_user.username, stdout=out)
    copy = ChatSession.objects.exclude(pk=source.pk).get()
    assert str(copy.uuid) in out.getvalue()
    assert (copy.owner, copy.title) == (other_user, "Original")
    copied = list(Episode.objects.for_session(copy.pk))
    assert [(e.user_input, e.response, e.metadata, e.created_at) for e in copied] == [
        (e.user_input, e.response, e.metadata, e.created_at) for e in eps
    ]
    stats = ChatSession.objects.with_aggregate_stats().get(pk=copy.pk)
    assert copy.cached_episode_count == stats.episode_count == 4
    assert copy.cached_total_tokens == stats.total_tokens == sum(e.token_count for e in eps)


def test_import_with_title_and_plain_episode_lines(owner, tmp_path, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"user_input": "hi", "response": "hello"}\n\n{"user_input": "and?", "response": "more"}\n'
    )
    call_command(
        "import_transcript", str(path), "--owner", "owner", "--title", "Imported", stdout=io.StringIO()
    )
    session = ChatSession.objects.get(owner=owner)
    assert session.title == "Imported"
    assert list(Episode.objects.for_session(session.pk).values_list("user_input", flat=True)) == [
        "hi",
        "and?",
    ]


def test_bad_lines_are_reported_by_number_and_nothing_is_stored(owner, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"user_input": "ok", "response": "fine"}\n'
        b'{"user_input": "no reply"}\n'
        b"not json\n"
        b'{"user_input": "x", "response": 5}\n'
        b'{"user_input": "ok", "response": "fine", "created_at": "yesterday"}\n'
        b"\xff\xfe\n"
        b'{"user_input": "ok", "response": "fine"}\n'
    )
    err = io.StringIO()
    with pytest.raises(CommandError, match="5 bad lines"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err)
    reported = err.getvalue().splitlines()
    assert [line.split(":")[0] for line in reported] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    assert '"response" is missing' in reported[0]
    assert ChatSession.objects.count() == 0
    assert Episode.objects.count() == 0


def test_import_requests_one_summarization_for_a_long_transcript(owner, tmp_path, monkeypatch):
    from summaries import signals

    calls = []
    monkeypatch.setattr(signals, "request_run", lambda **kw: calls.append(kw))
    path = tmp_path / "long.jsonl"
    path.write_text(
        "".join(
            json.dumps({"user_input": f"question {i} " * 20, "response": f"answer {i} " * 30}) + "\n"
            for i in range(40)
        )
    )
    call_command("import_transcript", str(path), "--owner", "owner", stdout=io.StringIO())
    session = ChatSession.objects.get(owner=owner)
    assert calls == [{"session_pk": session.pk, "batch": True, "notes": False}]
    assert session.cached_episode_count == 40


def test_import_unknown_owner(tmp_path, db):
    path = tmp_path / "t.jsonl"
    path.write_text('{"user_input": "a", "response": "b"}\n')
    with pytest.raises(CommandError, match="No user"):
        call_command("import_transcript", str(path), "--owner", "nobody")
