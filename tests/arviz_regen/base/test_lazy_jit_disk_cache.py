"""A second session finds every kernel the first compiled in numba's disk cache.

A kernel typed by something that differs between processes (e.g. a dispatcher passed as an
argument, typed by its object) is compiled again in every new session and never found in the
cache: the first-call cost then recurs at every start, silently. Both runs use a fresh
``NUMBA_CACHE_DIR``; the second must save nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


def _saved(cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "NUMBA_DEBUG_CACHE": "1", "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if "data saved" in line]


def test_second_session_compiles_nothing(tmp_path):
    first = _saved(tmp_path)
    assert first, "the first session compiled nothing: the check would be vacuous"
    again = _saved(tmp_path)
    assert not again, "compiled again in a new session (not found in the disk cache):\n" + "\n".join(again)
