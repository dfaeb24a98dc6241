"""numpy's products run on one thread a process (``sessions_app.semantic.threads``)."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from sessions_app.semantic.threads import one_blas_thread


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_the_process_runs_numpys_products_on_one_thread():
    # Set when the app was loaded (SessionsAppConfig.ready).
    assert _blas_threads() and set(_blas_threads()) == {1}


def test_a_thread_count_set_in_the_environment_is_kept(monkeypatch):
    with threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        one_blas_thread()
        assert set(_blas_threads()) == {2}
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
        one_blas_thread()
        assert set(_blas_threads()) == {1}
