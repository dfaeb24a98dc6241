"""Settings for the write benchmarks: production settings plus a bench-only URL module."""

from nexus.settings import *  # noqa: F403

ROOT_URLCONF = "bench.write_urls"
