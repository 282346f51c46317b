"""Which StopWhenConverged monitor progress bars show: the newest, until closed or collected."""

from __future__ import annotations

import gc

import arviz_regen
from arviz_regen.diagnostics.monitor_registry import MonitorRegistry
from arviz_regen.diagnostics.online import active_monitor


def _monitor():
    return arviz_regen.StopWhenConverged(n_chains=1, first=100, max_draws=1000)


def test_the_newest_monitor_is_active_until_closed_or_collected():
    first = _monitor()
    assert active_monitor() is first
    second = _monitor()
    assert active_monitor() is second
    first.close()  # not the active one: nothing changes
    assert active_monitor() is second
    second.close()
    assert active_monitor() is None
    with _monitor() as third:
        assert active_monitor() is third
    assert active_monitor() is None and third.decision["status"] == "undecided"
    fourth = _monitor()
    del fourth
    gc.collect()
    assert active_monitor() is None


def test_a_registry_holds_one_monitor_by_weak_reference():
    class Monitor:
        pass

    registry = MonitorRegistry()
    a, b = Monitor(), Monitor()
    registry.register(a)
    registry.register(b)
    assert registry.active is b
    registry.unregister(a)
    assert registry.active is b
    del b
    gc.collect()
    assert registry.active is None
