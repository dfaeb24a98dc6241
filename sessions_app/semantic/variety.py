"""Choosing exchanges that do not repeat each other.

A context quotes as many earlier exchanges as its budget holds, and an
exchange much like one already quoted adds little: the same request made
again, the same advice given again. Ranked by score alone, a question about
cooking fills the budget with ten tellings of the same recipe talk and
leaves out the one exchange where the user said what they cannot eat. So
the exchanges are chosen one at a time (maximal marginal relevance), and
each choice lowers the scores of those like it, by how far their cosine
goes beyond ``REDUNDANT_FROM``.

Measured through the API (bench/memory_recall.py): it raised every probe
set at 4,000 tokens; the figures, and the weights and thresholds tried,
are in bench/README.md.
"""

from __future__ import annotations

import heapq

import numpy as np

#: What an exchange as close as can be to one chosen before loses, in the
#: fused score's units (about a standard deviation of closeness each).
REDUNDANCY_WEIGHT = 3.0
#: The cosine of two exchanges' whole vectors from which the later choice
#: counts as repeating the earlier: above what most unrelated exchanges of
#: one conversation share, below what a request made again does.
REDUNDANT_FROM = 0.6


def varied(scores: np.ndarray, vectors: np.ndarray, limit: int) -> list[int]:
    """Positions in ``scores``, at most ``limit``, in the order chosen: each
    time the best score less its penalty for being like an exchange already
    chosen (``REDUNDANCY_WEIGHT`` times the share of the way from
    ``REDUNDANT_FROM`` to 1 that their cosine goes). ``vectors`` are unit
    rows, one per score; a zero row (an exchange not encoded yet) is never
    penalized and penalizes none. Equal scores keep their given order.

    Penalties only grow as more are chosen, so a score lowered for the
    choices so far is an upper bound of what it will be: candidates wait in
    a heap by that bound and are compared only with the choices made since
    they were last looked at (less than half the time of updating every candidate
    after every choice, for the 48 of 144 a context usually takes).
    """
    count = min(limit, len(scores))
    # (minus the score less the penalty known, position, choices it was compared with)
    waiting = [(-float(score), at, 0) for at, score in enumerate(scores)]
    heapq.heapify(waiting)
    chosen: list[int] = []
    rows = np.empty((count, vectors.shape[1]), dtype=vectors.dtype)
    while len(chosen) < count:
        bound, at, compared = heapq.heappop(waiting)
        if compared < len(chosen):
            closest = float((rows[compared : len(chosen)] @ vectors[at]).max())
            penalty = REDUNDANCY_WEIGHT * (closest - REDUNDANT_FROM) / (1 - REDUNDANT_FROM)
            heapq.heappush(waiting, (max(bound, penalty - float(scores[at])), at, len(chosen)))
            continue
        rows[len(chosen)] = vectors[at]
        chosen.append(at)
    return chosen
