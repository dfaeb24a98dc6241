"""The shared store under the real Redis (``NEXUS_TEST_REDIS_URL``): the test
process and other processes see one set of counts and marks."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from tests.integration_support import redis_url  # noqa: F401 - fixture
from tests.process_support import env_without

PREFIX = "nexus-cache"


@pytest.fixture
def shared_cache(redis_url, settings):  # noqa: F811
    """This process's cache is the Redis one, empty before and after."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": PREFIX,
        }
    }
    yield redis_url
    client.flushdb()


def run_in_other_process(redis_url: str, code: str, **env: str) -> str:
    """Run ``code`` in a fresh Django process (nexus.settings) on the same
    Redis cache; its stdout."""
    environ = env_without("CACHE_", "CELERY_", "API_")
    environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "nexus.settings",
            "DJANGO_DEBUG": "1",
            "DJANGO_ALLOWED_HOSTS": "testserver",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "CACHE_URL": redis_url,
            **env,
        }
    )
    prelude = "import django; django.setup(); from django.test import Client; client = Client()\n"
    result = subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, env=environ, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()
