"""Marks (nexus.marks) without a shared Redis: plain cache calls; and the
channel their changes travel on, apart for every cache on one server."""

from __future__ import annotations

import redis
from django.core.cache import cache

from nexus.marks import changes_channel, current_mark, set_mark


def test_without_redis_a_mark_is_the_cache_value():
    assert current_mark("m") is None
    set_mark("m", "v1", 60)
    assert current_mark("m") == "v1"


def test_caches_on_one_server_publish_on_their_own_channels():
    # Channels are server-wide; databases are not.
    one, two = (redis.Redis.from_url(f"redis://127.0.0.1:6379/{db}") for db in (1, 2))
    assert changes_channel(one) == cache.make_key("mark-changes") + ":db1"
    assert changes_channel(two) == cache.make_key("mark-changes") + ":db2"
