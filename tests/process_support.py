"""Starting, waiting for and stopping the processes that tests and benchmarks run.

- ``free_port()``: a free 127.0.0.1 port (servers under test never use fixed ones).
- ``wait_for()`` polls a condition within a time limit and raises
  ``WaitTimedOut``; ``wait_until()`` is the same for tests, failing the test
  with a message instead.
- ``env_without()``: this process's environment less the variables of some
  prefixes, so a child process reads only what the test sets.
- ``run_python()`` runs this interpreter (``manage.py``, ``-c code``) to the end;
  ``start_logged()`` starts a command in a process group of its own with its
  output in a log file; ``stop_process()`` ends a process (or its group):
  SIGTERM, then SIGKILL when it does not exit in time.
- ``gunicorn_server()``: the project's gunicorn (``nexus/gunicorn.conf.py``)
  on a free port, until it answers; stopped with its workers after.
- ``RedisServer`` and the ``own_redis`` fixture: a private ``redis-server``
  that a test may stop and start again; the machine's Redis is never touched.

Nothing here needs Django, so benchmark scripts use it too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def services_required() -> bool:
    return os.environ.get("NEXUS_REQUIRE_SERVICES", "").strip().lower() in {"1", "true", "yes", "on"}


def require_or_skip(reason: str) -> None:
    """Skip (or, when services are required, fail) with ``reason``."""
    if services_required():
        pytest.fail(f"NEXUS_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- waiting -------------------------------------------------------------------------


class WaitTimedOut(TimeoutError):
    """``wait_for`` ran out of time; ``__cause__`` is the last error the
    condition raised, if it raised one."""


def wait_for(
    condition: Callable[[], Any],
    *,
    timeout: float,
    interval: float = 0.1,
    message: str = "condition",
    retry_on: tuple[type[BaseException], ...] = (),
) -> Any:
    """Poll ``condition`` until it returns something truthy (returned).

    Exceptions of the ``retry_on`` types count as "not yet" (a process still
    starting refuses connections); any other exception propagates at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        error: BaseException | None = None
        try:
            value = condition()
        except retry_on as exc:
            error = exc
        else:
            if value:
                return value
        if time.monotonic() > deadline:
            raise WaitTimedOut(f"timed out after {timeout:g}s waiting for {message}") from error
        time.sleep(interval)


def wait_until(
    condition: Callable[[], Any],
    *,
    timeout: float = 30.0,
    interval: float = 0.1,
    message: str = "condition",
    retry_on: tuple[type[BaseException], ...] = (),
) -> Any:
    """``wait_for`` that fails the test, instead of hanging, after ``timeout`` seconds."""
    try:
        return wait_for(condition, timeout=timeout, interval=interval, message=message, retry_on=retry_on)
    except WaitTimedOut as exc:
        last = f" (last error: {exc.__cause__!r})" if exc.__cause__ is not None else ""
        pytest.fail(f"{exc}{last}", pytrace=False)


# --- starting and stopping -----------------------------------------------------------


def env_without(*prefixes: str) -> dict[str, str]:
    """This process's environment less every variable whose name starts with one of ``prefixes``."""
    return {name: value for name, value in os.environ.items() if not name.startswith(prefixes)}


def run_python(*args: str, env: Mapping[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """This interpreter with ``args`` (``"manage.py", ...`` or ``"-c", code``) run
    from the project root with exactly ``env``; output captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env=dict(env),
        timeout=timeout,
    )


def start_logged(
    command: list[str], *, log_path: Path, env: dict[str, str], cwd: Path = PROJECT_ROOT
) -> subprocess.Popen[bytes]:
    """Start ``command`` with stdout and stderr in ``log_path``, in a process
    group of its own so that ``stop_process(..., group=True)`` ends its children too."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def signal_group(process: subprocess.Popen[Any], sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``process`` leads (started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def stop_process(process: subprocess.Popen[Any], *, group: bool = False, timeout: float = 15.0) -> None:
    """SIGTERM, and SIGKILL if it has not exited after ``timeout`` seconds.
    With ``group`` the signals go to its whole process group."""
    if process.poll() is not None:
        return

    def send(sig: signal.Signals) -> None:
        if group:
            signal_group(process, sig)
        else:
            process.send_signal(sig)

    send(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        process.wait(timeout=5)


@contextlib.contextmanager
def gunicorn_server(
    env: Mapping[str, str],
    log_path: Path,
    *,
    workers: int = 1,
    threads: int = 4,
    ready_path: str = "/api/",
    timeout: float = 90.0,
) -> Iterator[str]:
    """gunicorn serving ``env`` with the project's config on a free port;
    yields its base URL once ``ready_path`` answers below 500 (its log in the
    failure otherwise), and stops it with its workers after."""
    port = free_port()
    env = {
        **env,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "GUNICORN_THREADS": str(threads),
        "GUNICORN_MAX_REQUESTS": "0",
    }
    command = [str(VENV_BIN / "gunicorn"), "nexus.wsgi", "--config", "nexus/gunicorn.conf.py"]
    process = start_logged(command, log_path=log_path, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: process.poll() is None and httpx.get(f"{base}{ready_path}", timeout=2).status_code < 500,
            timeout=timeout,
            message=f"gunicorn to answer\n{_tail(log_path)}",
            retry_on=(httpx.HTTPError,),
        )
        yield base
    finally:
        stop_process(process, group=True, timeout=15)


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-3000:]
    except FileNotFoundError:
        return ""


# --- a private redis-server ----------------------------------------------------------


def redis_answers(url: str) -> bool:
    """Whether Redis at ``url`` answers a PING within a second."""
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping())
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        return False


class RedisServer:
    """A private redis-server on a free 127.0.0.1 port, without persistence.

    ``stop()`` and ``start()`` again reuse the same port, so clients that
    reconnect find it where it was.
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="nexus-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            require_or_skip("redis-server is not installed")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--logfile",
                os.path.join(self.dir, "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while not redis_answers(self.url):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                pytest.fail("own redis-server did not start", pytrace=False)
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process is None:
            return
        stop_process(self.process, timeout=5)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own (``.url``, ``.port``); ``stop()`` it to
    see the broker go away, ``start()`` to bring it back on the same port."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()
