"""Web servers of the project as real processes, for the tests of what the
shared store does across processes and through a Redis outage: the
environment and database gunicorn (``process_support.gunicorn_server``)
serves, a SQLite database of the test's own, with whatever store and broker
the test gives it, production-shaped (debug off).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.process_support import env_without, run_python

PASSWORD = "outage-test-password"


def server_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """nexus.settings on ``tmp_path``'s SQLite database, no broker, no cache
    setting (the defaults), debug off; ``overrides`` on top."""
    env = env_without(
        "SUMMARY_", "DJANGO_", "CELERY_", "CONTEXT_", "INFERENCE_", "DATABASE_", "CACHE_", "API_", "PYTEST_"
    )
    env.update(
        DJANGO_SETTINGS_MODULE="nexus.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="served-test-only-secret-key",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_SECURE_HSTS_SECONDS="0",
        DJANGO_SESSION_COOKIE_SECURE="0",
        DJANGO_CSRF_COOKIE_SECURE="0",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        NEXUS_ENV_FILE="",
        NEXUS_SECRET_KEY_FILE="",
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


def prepare(env: dict[str, str], code: str = "") -> str:
    """Migrate the database, create the user ``ann`` (``PASSWORD``), then run
    ``code`` (Django set up, ``ann`` defined); its stdout."""
    migrated = run_python("manage.py", "migrate", "--noinput", env=env, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    prelude = (
        "import django; django.setup()\n"
        "from django.contrib.auth import get_user_model\n"
        f"ann = get_user_model().objects.create_user('ann', password={PASSWORD!r})\n"
    )
    done = run_python("-c", prelude + code, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def token_for(base: str, username: str = "ann", password: str = PASSWORD) -> str:
    answer = httpx.post(
        f"{base}/api/auth/token/", json={"username": username, "password": password}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["token"]
