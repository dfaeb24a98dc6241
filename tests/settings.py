"""Test settings: the real settings module, with test-only defaults.

The database comes from DATABASE_URL like everywhere else (PostgreSQL in CI,
SQLite when unset). Tasks run eagerly here; tests that need a real broker
and worker start them explicitly.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key")
# A developer's .env (written by bin/run) and generated secret never reach the tests,
# nor the processes they start.
os.environ["NEXUS_ENV_FILE"] = ""
os.environ["NEXUS_SECRET_KEY_FILE"] = ""

from nexus.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_BROKER_URL = "memory://"
CELERY_TASK_ALWAYS_EAGER = True
# Each test process counts in its own memory (tests that need the shared
# Redis cache build one from NEXUS_TEST_REDIS_URL); conftest clears it per test.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "nexus-tests"}}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# The test client speaks plain HTTP.
SECURE_SSL_REDIRECT = False
# Encoding every episode a test writes would slow the whole suite down; the
# tests of retrieval by meaning turn it on (the ``semantic`` fixture).
CONTEXT_SEMANTIC_CANDIDATES = 0
# No statement timeout unless a test sets one (tests/test_statement_timeout.py): the query a
# connection's first request would send to set it is not what query counts are about.
DATABASE_STATEMENT_TIMEOUT_MS = 0
