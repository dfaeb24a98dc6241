"""The Procfile's stack under honcho (as ``bin/stack`` runs it) rides out a
broker outage and a dead worker: with a redis-server of the test's own
stopped and started again, the worker and beat reconnect by themselves (beat's
sweep runs again on the worker); a worker killed outright is started again by
nexus.respawn, and the web server answers throughout.

Runs on SQLite (the web, worker and beat share the file) so it needs only
``redis-server``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.process_support import (  # noqa: F401 - own_redis: fixture
    VENV_BIN,
    free_port,
    own_redis,
    start_logged,
    stop_process,
    wait_until,
)
from tests.shared_store.servers import prepare, server_env

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SWEPT = "Task summaries.tasks.sweep_pending_summaries"


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (FileNotFoundError, ProcessLookupError):
        return found
    for child in map(int, children):
        found += [child, *descendants(child)]
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def worker_main_pid(honcho_pid: int) -> int | None:
    """The Celery worker's main process: the one nexus.respawn started (leader of its own session)."""
    for pid in descendants(honcho_pid):
        line = command_line(pid)
        if "celery -A nexus worker" in line and "nexus.respawn" not in line and os.getsid(pid) == pid:
            return pid
    return None


def test_the_stack_rides_out_a_broker_restart_and_a_dead_worker(tmp_path, own_redis):  # noqa: F811
    port = free_port()
    env = server_env(
        tmp_path,
        CELERY_BROKER_URL=own_redis.url,
        CELERY_BEAT_SCHEDULE_FILE=str(tmp_path / "celerybeat-schedule"),
        CELERY_CONCURRENCY="1",
        SUMMARY_SWEEP_SECONDS="1",
        LOG_LEVEL="INFO",
        PORT=str(port),
        GUNICORN_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        PATH=f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    )
    prepare(env)
    log = tmp_path / "stack.log"
    stack = start_logged(
        [str(VENV_BIN / "honcho"), "start", "--no-colour", "--procfile", "Procfile"], log_path=log, env=env
    )
    base = f"http://127.0.0.1:{port}"

    def text() -> str:
        return log.read_text(errors="replace")

    def swept_since(mark: int) -> bool:
        return any(SWEPT in line and "succeeded" in line for line in text()[mark:].splitlines())

    try:
        wait_until(
            lambda: httpx.get(f"{base}/healthz", timeout=5).status_code == 200,
            timeout=90,
            message="the web server",
            retry_on=(httpx.HTTPError,),
        )
        wait_until(lambda: swept_since(0), timeout=90, message=f"a first sweep\n{text()[-3000:]}")

        own_redis.stop()
        wait_until(
            lambda: httpx.get(f"{base}/healthz", timeout=5).status_code == 503,
            timeout=30,
            message="the outage",
        )
        wait_until(
            lambda: "Trying to reconnect" in text() or "Connection to broker lost" in text(),
            timeout=30,
            message=f"the worker to notice\n{text()[-3000:]}",
        )
        mark = len(text())
        own_redis.start()
        wait_until(
            lambda: swept_since(mark), timeout=90, message=f"a sweep after the restart\n{text()[-4000:]}"
        )
        assert stack.poll() is None

        worker = worker_main_pid(stack.pid)
        assert worker is not None, [command_line(p) for p in descendants(stack.pid)]
        os.killpg(worker, signal.SIGKILL)
        wait_until(lambda: "respawn: celery exited" in text(), timeout=30, message="respawn to notice")
        mark = len(text())
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
        wait_until(
            lambda: swept_since(mark), timeout=120, message=f"a sweep by the new worker\n{text()[-4000:]}"
        )
        assert stack.poll() is None
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
        new_worker = worker_main_pid(stack.pid)
        assert new_worker is not None and new_worker != worker
    finally:
        stop_process(stack, group=True, timeout=30)
