"""Shared set-up for benchmark scripts: a migrated PostgreSQL database of their own.

Benchmarks print figures; they are not tests. Run them from the project root:
``.venv/bin/python bench/<name>.py``. ``BENCH_DATABASE_URL`` picks the database
(default ``postgres://postgres@127.0.0.1:5432/nexus_bench``), created if missing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/nexus_bench"


def setup_django(**env: str) -> str:
    """Point Django at the benchmark database, create and migrate it; returns its URL."""
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
    for key, value in env.items():
        os.environ[key] = value
    sys.path.insert(0, str(ROOT))
    _create_database(url)

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return url


def setup_django_offline() -> None:
    """Django set up for a bench that reads no database (an in-memory SQLite
    stands in): the encoder, the tokenizer, the settings."""
    import warnings

    warnings.filterwarnings("ignore", "No directory at", UserWarning)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    os.environ["DATABASE_URL"] = "sqlite:///:memory:"
    import django

    django.setup()


def _create_database(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin_url = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def median_ms(fn: Callable[[], object], *, runs: int, warmup: int = 5) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)
