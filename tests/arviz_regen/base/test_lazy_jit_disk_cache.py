"""A second session finds every kernel the first compiled in numba's disk cache.

A kernel typed by something that differs between processes (e.g. a dispatcher passed as an
argument, typed by its object) is compiled again in every new session and never found in the
cache: the first-call cost then recurs at every start, silently. The script runs first in the
test's own process, which fills the suite's numba cache (``NUMBA_CACHE_DIR`` if set, else numba's
default beside the modules) with whatever it does not hold yet, then in a new session, which must
load the kernels from that cache and save nothing. Sharing the suite's cache compiles each kernel
once for the whole suite rather than once more in a fresh cache here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import numpy as np, arviz_regen
    from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs
    rng = np.random.default_rng(1)
    p = zipf_probs(12)
    states = random_partitions(12, 8, rng)
    jumpy = make_idata(states, metropolis_chain(p, 2, 3000, rng), np.log(p))
    # every draw a new state, held for 10 draws: SALSO follows the chains, not the states
    many = random_partitions(400, 8, rng)
    sticky = make_idata(many, np.arange(400).reshape(2, 200).repeat(10, axis=1), np.zeros(400))
    arviz_regen.hotelling_rs(jumpy, k=[2, 3])
    for data in (jumpy, sticky):
        arviz_regen.coclustering(data)
        arviz_regen.point_estimate(data, loss="VI", n_runs=2)
        arviz_regen.point_estimate(data, loss="binder", n_runs=2)
        arviz_regen.credible_ball(data)
    """
)


def _session():
    """The cache lines (``[cache] data loaded/saved ...``) of one session running SCRIPT."""
    env = {**os.environ, "NUMBA_DEBUG_CACHE": "1", "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if line.startswith("[cache] data ")]


def test_second_session_compiles_nothing():
    with warnings.catch_warnings():  # compiles and saves whatever the cache does not hold yet
        warnings.simplefilter("ignore")
        exec(SCRIPT, {})
    again = _session()
    saved = [line for line in again if "data saved" in line]
    assert not saved, "compiled again in a new session (not found in the disk cache):\n" + "\n".join(saved)
    loaded = [line for line in again if "data loaded" in line]
    # its seven top-level kernels (the callees are compiled into them): Metropolis chain,
    # renewal and permutation bootstraps, pair interval and run sums, SALSO, cluster tracks
    assert len(loaded) >= 5, "the new session loaded almost nothing from the cache: the check would be vacuous"
