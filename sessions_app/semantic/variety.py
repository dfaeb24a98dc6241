"""Choosing exchanges that do not repeat each other.

A context quotes as many earlier exchanges as its budget holds, and an
exchange much like one already quoted adds little: the same request made
again, the same advice given again. Ranked by score alone, a question about
cooking fills the budget with ten tellings of the same recipe talk and
leaves out the one exchange where the user said what they cannot eat. So
the exchanges are chosen one at a time (maximal marginal relevance), and
each choice lowers the scores of those like it, by how far their cosine
goes beyond ``REDUNDANT_FROM``.

Measured through the API (bench/memory_recall.py, SQLite, answer words
found at 1,000 / 2,000 / 4,000 tokens), before and with it, the weight 3:

==========================  ===============  ===============
set, seed                   before           varied
==========================  ===============  ===============
synthetic, 7                .59 / .82 / .84  .59 / .85 / .96
synthetic, 11               .41 / .79 / .84  .41 / .85 / .96
dialogue, 7                 .22 / .25 / .56  .23 / .31 / .61
dialogue, 11                .16 / .25 / .56  .16 / .28 / .63
dialogue literal, 7         .50 / .46 / .87  .50 / .50 / .91
dialogue literal, 11        .35 / .46 / .85  .39 / .43 / .89
==========================  ===============  ===============

The weight 2 or 4 (threshold 0.6) and the threshold 0.5 (weight 3) came
within 0.035 of these at every figure, some above, some below; the
threshold 0.7 (weight 2) fell up to 0.065 below. The gain comes from the
idea, not the numbers. Also tried and not taken: counting the recent
window, which the prompt quotes anyway, as chosen before the first pick
(higher at four of the eighteen figures, lower at three, two of those at
4,000 tokens).
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
