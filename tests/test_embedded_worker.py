"""The embedded worker (``nexus.embedded_worker``): work runs on its own
thread in order, a failing item does not end it, periodic work runs at
start and on its interval, and stopping finishes the running item and
drops the queued ones. ``dispatch`` hands tasks to it when it runs."""

from __future__ import annotations

import threading
import time

import pytest

from nexus import dispatch, embedded_worker
from nexus.embedded_worker import EmbeddedWorker, Periodic


@pytest.fixture
def worker():
    started = EmbeddedWorker(name="test-worker")
    yield started
    started.stop(timeout=5)


def test_work_runs_on_the_worker_thread_in_order(worker):
    seen: list[tuple[int, str]] = []
    worker.start()
    for n in range(5):
        worker.submit(lambda n=n: seen.append((n, threading.current_thread().name)))
    assert worker.wait_idle(5)
    assert [n for n, _ in seen] == [0, 1, 2, 3, 4]
    assert {name for _, name in seen} == {"test-worker"}


def test_a_failing_item_is_logged_and_the_next_one_runs(worker, caplog):
    seen: list[str] = []

    def broken() -> None:
        raise RuntimeError("model server exploded")

    worker.start()
    worker.submit(broken)
    worker.submit(lambda: seen.append("after"))
    assert worker.wait_idle(5)
    assert seen == ["after"]
    assert worker.running
    assert any("embedded worker task failed" in r.getMessage() for r in caplog.records)


def test_periodic_work_runs_at_start_and_again_on_its_interval():
    ticks: list[float] = []
    worker = EmbeddedWorker(periodic=[Periodic(name="sweep", seconds=0.2, work=lambda: ticks.append(time.monotonic()))])
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while len(ticks) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        worker.stop(timeout=5)
    assert len(ticks) >= 3
    assert all(later - earlier >= 0.15 for earlier, later in zip(ticks, ticks[1:], strict=False))


def test_queued_work_does_not_wait_for_the_next_periodic_run():
    done = threading.Event()
    worker = EmbeddedWorker(periodic=[Periodic(name="hourly", seconds=3600, work=lambda: None)])
    worker.start()
    try:
        worker.submit(done.set)
        assert done.wait(2)
    finally:
        worker.stop(timeout=5)


def test_stopping_finishes_the_running_item_and_drops_the_rest(worker):
    running, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def slow() -> None:
        running.set()
        release.wait(5)
        seen.append("slow finished")

    worker.start()
    worker.submit(slow)
    worker.submit(lambda: seen.append("queued"))
    assert running.wait(5)
    stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 5})
    stopper.start()
    time.sleep(0.1)
    release.set()
    stopper.join(5)
    assert seen == ["slow finished"]
    assert not worker.running


class RecordingTask:
    """A task that records the thread it was applied on."""

    name = "tests.record"

    def __init__(self) -> None:
        self.threads: list[str] = []

    def apply_async(self, **kwargs) -> None:
        self.threads.append(threading.current_thread().name)


def test_dispatch_sends_a_task_to_the_running_worker(monkeypatch):
    task = RecordingTask()
    running = EmbeddedWorker(name="nexus-worker")
    monkeypatch.setattr(embedded_worker, "worker", running)
    running.start()
    try:
        dispatch.dispatch(task, {"session_pk": 1})
        assert running.wait_idle(5)
    finally:
        running.stop(timeout=5)
    assert task.threads == ["nexus-worker"]


def test_without_a_worker_dispatch_runs_the_task_where_it_is_sent(monkeypatch):
    task = RecordingTask()
    monkeypatch.setattr(embedded_worker, "worker", EmbeddedWorker())
    dispatch.dispatch(task, {"session_pk": 1})
    assert task.threads == [threading.current_thread().name]
