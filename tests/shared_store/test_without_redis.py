"""What is shared stays shared without Redis.

Two web servers (gunicorn, each its own process with its embedded worker) on
one database and no Redis, as a deployment the README allows: the shared
store is then the database (``CACHE_URL=db://``), never each process's memory.
A token revoked through one is refused by both at once; a user's throttle is
counted across both; eight concurrent regenerations of one row, split between
them, make one model call (``test_regenerations_..._make_one_model_call``
tells how the test makes the per-process mark show).
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.clock import start_early_in_a_minute
from tests.process_support import gunicorn_server
from tests.shared_store.servers import prepare, server_env, token_for


@pytest.fixture
def two_servers(tmp_path, fake_model_process):
    env = server_env(
        tmp_path,
        INFERENCE_BACKEND="ollama",
        INFERENCE_SERVICE_URL=fake_model_process.url,
        UTILITY_MODEL="fake-utility",
        SUMMARY_THRESHOLD_TOKENS="1000000",  # no summarization of its own: only the regenerations call
        API_THROTTLE_USER="20/minute",
    )
    ids = prepare(
        env,
        "from rest_framework.authtoken.models import Token\n"
        "from sessions_app.services import session_create\n"
        "from tests.factories import EpisodeFactory, SummaryFactory\n"
        "session = session_create(owner=ann, title='Garden')\n"
        "first, last = EpisodeFactory(session=session), EpisodeFactory(session=session)\n"
        "row = SummaryFactory(session=session, first_episode_id=first.pk, last_episode_id=last.pk)\n"
        "other = session_create(owner=ann, title='Kitchen')\n"
        "EpisodeFactory(session=other), EpisodeFactory(session=other)\n"
        "bob = get_user_model().objects.create_user('bob', password='bob-password-1')\n"
        "print(row.pk, other.uuid, Token.objects.create(user=bob).key)\n",
    )
    summary_pk, other_session, bob_token = ids.split()
    with gunicorn_server(env, tmp_path / "a.log") as a, gunicorn_server(env, tmp_path / "b.log") as b:
        yield a, b, summary_pk, bob_token, other_session


def get_sessions(base: str, token: str) -> int:
    return httpx.get(
        f"{base}/api/sessions/", headers={"Authorization": f"Token {token}"}, timeout=10
    ).status_code


def test_a_revoked_token_fails_in_both_processes_at_once(two_servers):
    a, b, *_ = two_servers
    token = token_for(a)
    # Both processes have used the token (and would remember it, per process).
    assert [get_sessions(a, token), get_sessions(b, token), get_sessions(b, token)] == [200, 200, 200]
    revoked = httpx.delete(f"{a}/api/auth/token/", headers={"Authorization": f"Token {token}"}, timeout=10)
    assert revoked.status_code == 204
    assert [get_sessions(server, token) for server in (b, a, b, a, b, a, b, a)] == [401] * 8


def test_a_users_throttle_counts_across_both_processes(two_servers):
    a, b, _, bob, _ = two_servers
    start_early_in_a_minute()
    answers = [get_sessions(server, bob) for server in (a, b) * 10]
    assert answers == [200] * 20
    assert get_sessions(a, bob) == 429
    assert get_sessions(b, bob) == 429


def test_regenerations_of_one_row_in_both_processes_make_one_model_call(two_servers, fake_model_process):
    """Four regenerations of the row sent to A, and while A's model call runs,
    four sent to B. B's embedded worker is busy meanwhile (a slow summary of
    another session), so a regeneration B queued would run after A's ended
    (the row's lease free again) and call the model a second time: only a
    mark both processes share keeps B from queueing one."""
    a, b, summary_pk, _, other_session = two_servers
    auth = {"Authorization": f"Token {token_for(a)}"}
    fake_model_process.set_mode("ok", latency=2.0, script=["slow"], slow_seconds=8.0)

    busy = httpx.post(f"{b}/api/sessions/{other_session}/summarize/", headers=auth, timeout=10)
    assert busy.status_code == 202, busy.text
    fake_model_process.wait_for_requests(1)  # B's worker is in its slow call

    def regenerate_four(base: str) -> list[int]:
        answers: list[int] = []
        start = threading.Barrier(4)

        def one() -> None:
            start.wait()
            url = f"{base}/api/summaries/{summary_pk}/regenerate/"
            answers.append(httpx.post(url, headers=auth, timeout=30).status_code)

        threads = [threading.Thread(target=one) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        return answers

    assert regenerate_four(a) == [202] * 4
    assert len(fake_model_process.wait_for_requests(2)) == 2  # A's regeneration is calling the model
    assert regenerate_four(b) == [202] * 4

    def summarized() -> bool:
        answer = httpx.get(f"{b}/api/sessions/{other_session}/summaries/", headers=auth, timeout=10)
        assert answer.status_code == 200, answer.text
        rows = answer.json()
        rows = rows["results"] if isinstance(rows, dict) else rows
        return bool(rows)

    # Few reads, far apart: the user's throttle here is 20 a minute.
    deadline = time.monotonic() + 60
    time.sleep(6)
    while not summarized():
        assert time.monotonic() < deadline, "B's slow summary never finished"
        time.sleep(2)
    # What B's worker would run next (a queued regeneration) has had its time to call the model.
    time.sleep(5)
    calls = [r for r in fake_model_process.requests if r["path"] == "/api/chat"]
    assert len(calls) == 2, [r["body"]["messages"][-1]["content"][:80] for r in calls]
