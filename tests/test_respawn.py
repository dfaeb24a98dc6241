"""The worker and beat outlive their own exits (nexus.respawn), so honcho
(``bin/stack``) never stops the web server because the worker died; and
Celery itself reconnects to a broker that went away, for as long as it takes."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import httpx

from nexus.celery import app as celery_app
from tests.process_support import VENV_BIN, free_port, start_logged, stop_process, wait_until

ROOT = Path(__file__).resolve().parent.parent


def respawned(code: str, tmp_path: Path):
    """``python -c code`` under nexus.respawn, its output in tmp_path/respawn.log."""
    return start_logged(
        [sys.executable, "-m", "nexus.respawn", sys.executable, "-c", code],
        log_path=tmp_path / "respawn.log",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_a_command_that_exits_is_started_again(tmp_path):
    starts = tmp_path / "starts"
    process = respawned(f"open({str(starts)!r}, 'a').write('x'); raise SystemExit(3)", tmp_path)
    try:
        wait_until(
            lambda: starts.exists() and len(starts.read_text()) >= 2, timeout=20, message="a second start"
        )
        assert process.poll() is None
        assert "exited with status 3" in (tmp_path / "respawn.log").read_text()
    finally:
        stop_process(process)
    assert process.returncode is not None


def test_a_stop_reaches_the_command_once_and_ends_the_loop(tmp_path):
    seen = tmp_path / "signals"
    code = (
        "import signal, sys, time\n"
        f"def on(signum, frame):\n    open({str(seen)!r}, 'a').write(f'{{signum}} '); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, on)\n"
        f"open({str(seen)!r}, 'a').write('up ')\n"
        "time.sleep(60)\n"
    )
    process = respawned(code, tmp_path)
    wait_until(lambda: seen.exists() and "up" in seen.read_text(), timeout=20, message="the command to start")
    # What honcho sends: SIGTERM to the whole group.
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    time.sleep(1.5)  # longer than the first pause: a restart would have happened
    assert seen.read_text().split() == ["up", str(int(signal.SIGTERM))]


def test_procfile_runs_worker_and_beat_under_respawn():
    entries = dict(
        line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip()
    )
    assert entries["worker"].strip().startswith("python -m nexus.respawn celery -A nexus worker")
    assert entries["beat"].strip().startswith("python -m nexus.respawn celery -A nexus beat")
    assert "respawn" not in entries["web"]


def test_celery_reconnects_to_the_broker_for_as_long_as_it_takes():
    assert celery_app.conf.broker_connection_retry is True
    assert celery_app.conf.broker_connection_retry_on_startup is True
    assert celery_app.conf.broker_connection_max_retries is None


def test_under_honcho_a_dying_worker_leaves_the_web_serving(tmp_path):
    port = free_port()
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        f"web: {sys.executable} -m http.server {port} --bind 127.0.0.1\n"
        f"worker: {sys.executable} -m nexus.respawn {sys.executable} -c 'raise SystemExit(1)'\n"
    )
    log = tmp_path / "honcho.log"
    stack = start_logged(
        [str(VENV_BIN / "honcho"), "start", "--no-colour", "--procfile", str(procfile)],
        log_path=log,
        env={"PATH": f"{VENV_BIN}:/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        wait_until(
            lambda: log.read_text().count("starting it again") >= 2,
            timeout=30,
            message=f"the worker to die twice\n{log.read_text() if log.exists() else ''}",
        )
        assert stack.poll() is None, log.read_text()
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200
    finally:
        stop_process(stack, group=True)


def test_without_respawn_honcho_stops_the_web_when_the_worker_exits(tmp_path):
    """Why the Procfile needs nexus.respawn: honcho's own behaviour."""
    port = free_port()
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        f"web: {sys.executable} -m http.server {port} --bind 127.0.0.1\n"
        f"worker: {sys.executable} -c 'import time; time.sleep(2); raise SystemExit(1)'\n"
    )
    stack = start_logged(
        [str(VENV_BIN / "honcho"), "start", "--no-colour", "--procfile", str(procfile)],
        log_path=tmp_path / "honcho.log",
        env={"PATH": f"{VENV_BIN}:/usr/bin:/bin"},
        cwd=ROOT,
    )
    try:
        stack.wait(timeout=30)
    finally:
        stop_process(stack, group=True)
    assert "web.1" in (tmp_path / "honcho.log").read_text()
