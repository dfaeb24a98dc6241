"""The shared store's tables, for deployments without Redis (``nexus.store_settings``):
Django's database cache and the counters (``nexus.counters``)."""
