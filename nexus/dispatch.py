"""Sending a Celery task from a web request without holding it up."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from nexus import embedded_worker
from nexus.after_response import after_response

# A short publish retry: a broker outage must not hold up a web request.
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def dispatch(task: Any, kwargs: dict[str, Any]) -> None:
    """Send ``task`` to the broker; with no broker, to the embedded worker
    when this process runs one (a web process), else run it here (a
    management command, the test suite). Raises what the broker raises; call
    after commit, as a worker may start before an open transaction commits."""
    if settings.CELERY_TASK_ALWAYS_EAGER and embedded_worker.submit(_Applied(task, kwargs)):
        return
    # Eager (no broker, no worker here), this runs the task at once.
    task.apply_async(kwargs=kwargs, retry=True, retry_policy=PUBLISH_RETRY)


class _Applied:
    """``task`` applied with ``kwargs``: named after the task in the worker's log."""

    __slots__ = ("__name__", "kwargs", "task")

    def __init__(self, task: Any, kwargs: dict[str, Any]) -> None:
        self.task, self.kwargs, self.__name__ = task, kwargs, task.name

    def __call__(self) -> None:
        self.task.apply_async(kwargs=self.kwargs)


def after_the_response(work: Any) -> bool:
    """Keep ``work`` off the response: on the embedded worker when this
    process runs one, else once the current response has been sent (on
    the request's thread: for cheap work only, such as a check and a
    publish); False outside both (the caller runs it)."""
    return embedded_worker.submit(work) or after_response(work)
