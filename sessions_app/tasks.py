"""The app's Celery tasks, where ``autodiscover_tasks`` looks for them."""

from sessions_app.search.tasks import purge_index
from sessions_app.semantic.tasks import embed_session

__all__ = ["embed_session", "purge_index"]
