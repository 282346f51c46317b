"""CPU time while numba's compiler lock is held: compilation proper (or loading from numba's disk cache).

Numba's compile events miss cfuncs; its compiler lock covers every compilation, cfuncs included.
Used by ``bench_first_run.py`` (in each entry point's interpreter) and ``bench_summaries.py``.
"""

from __future__ import annotations

import time


def register_lock_cpu():
    """Register and return a listener whose ``held`` adds up the CPU s under the lock (imports numba)."""
    from numba.core import event

    class LockCPU(event.Listener):
        depth, start, held = 0, 0.0, 0.0

        def on_start(self, ev):
            self.depth += 1
            if self.depth == 1:
                self.start = time.process_time()

        def on_end(self, ev):
            self.depth -= 1
            if self.depth == 0:
                self.held += time.process_time() - self.start

    listener = LockCPU()
    event.register("numba:compiler_lock", listener)
    return listener
