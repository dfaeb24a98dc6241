"""Sending a Celery task from a web request without holding it up."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from nexus.after_response import after_response

# A short publish retry: a broker outage must not hold up a web request.
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def dispatch(task: Any, kwargs: dict[str, Any]) -> None:
    """Send ``task`` to the broker, or, with no broker (eager tasks) inside a
    request, run it once the response has been sent: it would otherwise run
    right here, before the response. Raises what the broker raises; call
    after commit, as a worker may start before an open transaction commits."""
    if settings.CELERY_TASK_ALWAYS_EAGER and after_response(lambda: task.apply_async(kwargs=kwargs)):
        return
    task.apply_async(kwargs=kwargs, retry=True, retry_policy=PUBLISH_RETRY)
