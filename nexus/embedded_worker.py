"""The embedded default's worker: background work without a broker.

With no ``CELERY_BROKER_URL`` there is no Celery worker, yet summarization
and encoding must not run on the thread that served a request: that thread
also holds the client's keep-alive connection, whose next request would
wait behind the work. So the web process starts one daemon thread
(``start``, called by ``nexus.wsgi`` and ``nexus.asgi``) that drains a
queue of work, one item at a time, and also runs beat's periodic tasks
(the sweep, the retention purge) at start and on their intervals, since the
embedded default has no beat either.

An item that raises is logged and the next one runs. At exit the thread
finishes the item it is running; what is still queued is left to the sweep
of the next start. Processes that never start it (management commands, the
test suite) run a task where it is sent (``nexus.dispatch``).
"""

from __future__ import annotations

import atexit
import heapq
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connections

logger = logging.getLogger("nexus.embedded_worker")

Work = Callable[[], Any]


@dataclass(frozen=True)
class Periodic:
    """Work the worker runs at start and then every ``seconds``."""

    name: str
    seconds: float
    work: Work


class EmbeddedWorker:
    """One daemon thread draining a queue, plus periodic work."""

    def __init__(self, *, periodic: Sequence[Periodic] = (), name: str = "nexus-worker") -> None:
        self.periodic = tuple(periodic)
        self.name = name
        self._queue: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._idle = threading.Condition()
        self._unfinished = 0
        self._thread: threading.Thread | None = None
        self._pid: int | None = None

    @property
    def running(self) -> bool:
        # A forked child inherits the object but not the thread.
        return self._thread is not None and self._pid == os.getpid() and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stopping.clear()
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def submit(self, work: Work) -> None:
        """Queue ``work`` for the thread; it runs after everything queued before it."""
        with self._idle:
            self._unfinished += 1
        self._queue.put(work)

    def stop(self, *, timeout: float | None = None) -> None:
        """Let the running item finish, drop the queued ones, end the thread."""
        thread = self._thread
        if thread is None or not self.running:
            return
        self._stopping.set()
        self._queue.put(None)  # wakes a thread waiting for work
        thread.join(timeout)
        self._thread = None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running; False on timeout (tests, shutdown hooks)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def _loop(self) -> None:
        due = [(time.monotonic(), index) for index in range(len(self.periodic))]
        heapq.heapify(due)
        while not self._stopping.is_set():
            wait = max(0.0, due[0][0] - time.monotonic()) if due else None
            try:
                work = self._queue.get(timeout=wait)
            except queue.Empty:
                _, index = heapq.heappop(due)
                periodic = self.periodic[index]
                self._run(periodic.work, what=periodic.name)
                heapq.heappush(due, (time.monotonic() + periodic.seconds, index))
                continue
            if work is None or self._stopping.is_set():
                break
            try:
                self._run(work, what=getattr(work, "__name__", "task"))
            finally:
                with self._idle:
                    self._unfinished -= 1
                    self._idle.notify_all()
        # The thread's own database connection ends with it, not at garbage collection.
        connections.close_all()
        logger.info("embedded worker stopped", extra={"outcome": "stopped"})

    @staticmethod
    def _run(work: Work, *, what: str) -> None:
        # The thread keeps one database connection across items, closed when
        # broken or past its age as a request's would be.
        close_old_connections()
        try:
            work()
        except Exception:  # noqa: BLE001 - one failed item must not end the worker
            logger.exception("embedded worker task failed", extra={"task": what})
        finally:
            close_old_connections()


#: The process's worker; ``start`` is called by the web entry points only.
worker = EmbeddedWorker()


def start(*, periodic: Sequence[Periodic] = (), stop_timeout: float = 60.0) -> None:
    """Start the process's worker with ``periodic`` work (idempotent, fork-aware)."""
    if worker.running:
        return
    worker.periodic = tuple(periodic)
    worker.start()
    atexit.register(worker.stop, timeout=stop_timeout)


def submit(work: Work) -> bool:
    """Hand ``work`` to the worker; False when this process runs none."""
    if not worker.running:
        return False
    worker.submit(work)
    return True
