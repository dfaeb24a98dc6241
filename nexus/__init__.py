import os

# numpy's BLAS would start a thread per core for each multiplication of the
# sentence encoder (sessions_app.semantic); on a small machine serving
# requests in parallel those threads fight over the cores and every encoding
# gets several times slower. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Import the Celery app so @shared_task binds to it when Django starts.
from nexus.celery import app as celery_app  # noqa: E402

__all__ = ("celery_app",)
