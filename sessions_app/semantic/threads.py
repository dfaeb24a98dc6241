"""One thread for numpy's products in each process.

numpy's OpenBLAS splits a product of a few thousand vectors over every core
it finds. On a server those cores are busy with other requests, the
database and the question's encoder, and a split product waits for its
slowest part: beside one busy process, comparing a question with a long
session's vectors (``neighbours.closeness``) took 2 to 5 ms more at the
median than on one thread, and twice as long at the 90th percentile
(bench/README.md, blas_threads.py). Requests already run side by side, so
each gets one thread, as the encoder does (``encoder.Encoder``). A thread
count the operator set in the environment is kept.
"""

from __future__ import annotations

import os

#: Where an operator tells OpenBLAS (or another BLAS numpy may be built with) its threads.
THREAD_SETTINGS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """Limit numpy's BLAS to one thread in this process, unless the environment says otherwise."""
    if any(os.environ.get(name, "").strip() for name in THREAD_SETTINGS):
        return
    import numpy  # noqa: F401  (loads the BLAS library threadpoolctl finds)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
