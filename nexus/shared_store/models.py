"""The shared store in the database, where no Redis is configured.

Every process of the deployment reads and writes these rows, so what one
process counts or marks, the others see at once (never per-process memory):

- ``CacheEntry`` is the table of Django's database cache backend
  (``django.core.cache.backends.db.DatabaseCache``, the layout its
  ``createcachetable`` makes): token generations and queued regenerations,
  through Django's cache API.
- ``Counter`` holds the counts that must be atomic across processes
  (throttles, failed logins): one upsert adds to a count and returns it
  (``nexus.counters``), which the cache API cannot do in one statement.
"""

from __future__ import annotations

from django.db import models


class CacheEntry(models.Model):
    cache_key = models.CharField(max_length=255, primary_key=True)
    value = models.TextField()
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "nexus_cache"

    def __str__(self) -> str:
        return self.cache_key


class Counter(models.Model):
    name = models.CharField(max_length=255, primary_key=True)
    value = models.BigIntegerField()
    # Unix seconds: compared in plain SQL by the upsert, on SQLite and PostgreSQL alike.
    expires_at = models.BigIntegerField(db_index=True)

    class Meta:
        db_table = "nexus_counter"

    def __str__(self) -> str:
        return f"{self.name}={self.value}"
