"""The Celery app: configured from Django settings under the CELERY_ namespace;
and, with no broker, the embedded worker that stands in for Celery's worker
and beat in a web process (``nexus.embedded_worker``)."""

import os

from celery import Celery
from django.conf import settings

from nexus import embedded_worker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")

app = Celery("nexus")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def start_embedded_worker() -> bool:
    """With no broker, start this process's worker with beat's schedule as
    its periodic work; True when it runs. Called by the web entry points
    once Django is set up."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    periodic = [
        embedded_worker.Periodic(name=name, seconds=float(entry["schedule"]), work=_beat_entry(entry["task"]))
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    ]
    embedded_worker.start(periodic=periodic)
    return True


def _beat_entry(task_name: str) -> embedded_worker.Work:
    def run() -> None:
        app.tasks[task_name].apply()

    run.__name__ = task_name
    return run
