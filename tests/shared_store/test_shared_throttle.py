"""Throttle counts are shared by every process on the Redis cache."""

from __future__ import annotations

import pytest
import redis
from rest_framework.test import APIClient

from tests.shared_store.conftest import run_in_other_process

pytestmark = pytest.mark.django_db


def test_two_processes_share_the_anonymous_count(shared_cache, settings):
    settings.API_THROTTLE_ANON = "3/day"
    client = APIClient()
    here = [client.post("/api/auth/token/", {}, format="json").status_code for _ in range(2)]
    there = run_in_other_process(
        shared_cache,
        "print(*[client.post('/api/auth/token/', {}, content_type='application/json').status_code"
        " for _ in range(2)])",
        API_THROTTLE_ANON="3/day",
    )
    assert here == [400, 400]
    assert there == "400 429"
    assert client.post("/api/auth/token/", {}, format="json").status_code == 429


def test_two_cache_clients_share_one_counter(shared_cache):
    from django.core.cache.backends.redis import RedisCache

    from nexus.counters import count_in_window

    counts = [count_in_window("throttle_anon_x_1", 60) for _ in range(3)]
    assert counts == [1, 2, 3]
    # Another client of the same cache reads the count, and it expires.
    other = RedisCache(shared_cache, {"KEY_PREFIX": "nexus-cache"})
    assert other.get("throttle_anon_x_1") == 3
    assert 0 < redis.Redis.from_url(shared_cache).ttl(other.make_key("throttle_anon_x_1")) <= 60
