"""One BLAS thread inside the diagnostics, whose matrix products are small.

The diagnostics multiply small matrices many times: the tour bootstrap's replicate weights by the
tour types, batch means, quadratic forms. A second BLAS thread gains nothing there, and when the other
cores are busy (chains sampling beside an online monitor, dask workers, a second notebook) OpenBLAS's
idle threads spin waiting for work and take the caller's CPU (figures in the performance page). The
limit holds only during the call; the previous one is restored after it, also on error.
"""

from __future__ import annotations

import functools

__all__ = ["one_blas_thread"]


def one_blas_thread(func):
    """Decorate ``func`` to run with one BLAS thread (threadpoolctl), restoring the previous limit after."""

    @functools.wraps(func)
    def call(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        # libraries loaded since the last call are seen too (a controller made once would miss them)
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    call.one_blas_thread = True
    return call
