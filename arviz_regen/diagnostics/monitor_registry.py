"""Which :class:`~arviz_regen.StopWhenConverged` monitor sampler progress bars show.

PyMC gives a ``pm.sample`` callback no way to reach the step methods, and a progress bar decides
its columns before the first draw, so the monitor announces itself here when it is created. The
registry holds one monitor at a time, by weak reference, from its creation until the first of:
another monitor is created, it is closed (:meth:`StopWhenConverged.close`, or the end of a
``with`` block), it is garbage collected.
"""

from __future__ import annotations

import threading
import weakref

__all__ = ["MonitorRegistry", "registry"]


class MonitorRegistry:
    """Holds the active monitor by weak reference (thread safe)."""

    def __init__(self):
        self._ref = None
        self._lock = threading.Lock()

    def register(self, monitor):
        """Make ``monitor`` the active one (replacing any other)."""
        with self._lock:
            self._ref = weakref.ref(monitor)

    def unregister(self, monitor):
        """Forget ``monitor`` if it is the active one (else nothing)."""
        with self._lock:
            if self._ref is not None and self._ref() is monitor:
                self._ref = None

    @property
    def active(self):
        """The active monitor, or None."""
        ref = self._ref
        return ref() if ref is not None else None


#: the process's registry, which the monitors register with
registry = MonitorRegistry()
