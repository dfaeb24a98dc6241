"""Counters in the shared store (nexus.counters): exact by default, and in
batches for high rates, never handing out a number twice."""

from __future__ import annotations

from django.core.cache import cache

from nexus.api.throttling import batch_for
from nexus.counters import count_in_window


def test_counts_are_exact_one_at_a_time():
    assert [count_in_window("c1", 60) for _ in range(4)] == [1, 2, 3, 4]
    assert cache.get("c1") == 4


def test_a_batch_is_taken_at_once_and_handed_out_in_order():
    numbers = [count_in_window("c2", 60, batch=10) for _ in range(25)]
    assert numbers == list(range(1, 26))
    # Three batches taken from the store: the store is at most one batch ahead.
    assert cache.get("c2") == 30


def test_another_process_taking_numbers_meanwhile_is_never_given_the_same_ones():
    mine = [count_in_window("c3", 60, batch=5) for _ in range(2)]
    cache.incr("c3", 5)  # another process's batch: 6..10
    mine += [count_in_window("c3", 60, batch=5) for _ in range(5)]
    assert mine == [1, 2, 3, 4, 5, 11, 12]


def test_low_rates_are_counted_exactly_and_high_ones_in_batches():
    assert batch_for(300) == 1
    assert batch_for(20_000) == 100
