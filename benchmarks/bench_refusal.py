"""Summaries beyond this machine's memory are refused before they build anything (issue 27, item 3).

Run from the repository root::

    python benchmarks/bench_refusal.py

Each case is a posterior whose summary cannot fit in the memory available here (a broadcast array of
labels: its sizes are real, its memory nothing), called as a user's first call in a fresh process
(the package imported, nothing compiled): ``point_estimate`` VI and ``credible_ball`` VI on
4 chains x 100,000 draws x 100,000 items (the draws alone 320 GB), Binder's ``route="psm"`` and
``coclustering`` on 4 x 200 draws x 100,000 items (an items x items matrix of 80 GB each). Columns:
wall and CPU seconds from the call to its ``MemoryError`` (goal: within 0.5 s), peak RSS of the
process, and the call the message names instead. The previous revisions allocated or crashed here:
there is no baseline to time, so none is run; a case that does not refuse fails the run.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.5
CASES = {
    "point_estimate_VI": ((4, 100_000, 100_000), "coords="),
    "credible_ball_VI": ((4, 100_000, 100_000), "coords="),
    "point_estimate_binder_psm": ((4, 200, 100_000), "route='draws'"),
    "coclustering": ((4, 200, 100_000), "items="),
}


def run_case(name):
    """In this fresh process: the call until its MemoryError; one JSON line."""
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import xarray as xr

    import arviz_regen as ar

    shape, advice = CASES[name]
    z = np.broadcast_to(np.zeros(1, dtype=np.int64), shape)
    post = xr.Dataset({"z": (("chain", "draw", "z_dim"), z)})
    calls = {
        "point_estimate_VI": lambda: ar.point_estimate(post, loss="VI"),
        "credible_ball_VI": lambda: ar.credible_ball(post, np.zeros(shape[-1], dtype=np.int64), loss="VI"),
        "point_estimate_binder_psm": lambda: ar.point_estimate(post, loss="binder", route="psm"),
        "coclustering": lambda: ar.coclustering(post),
    }
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        calls[name]()
        message = None
    except MemoryError as err:
        message = str(err)
    rec = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0, "message": message}
    rec["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rec["names_advice"] = message is not None and advice in message
    print(json.dumps(rec))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        run_case(sys.argv[2])
        return 0
    print(f"{'case':<28}{'shape':>22}{'wall s':>8}{'CPU s':>7}{'RSS GB':>8}  refused, naming")
    ok = True
    for name, (shape, advice) in CASES.items():
        proc = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            print(f"{name:<28}FAILED: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
            ok = False
            continue
        rec = json.loads(lines[-1])
        refused = rec["message"] is not None
        fine = refused and rec["names_advice"] and rec["wall"] <= GOAL_S
        ok &= fine
        what = f"{advice}: {'yes' if rec['names_advice'] else 'NO'}" if refused else "NOT REFUSED"
        quick = "yes" if rec["wall"] <= GOAL_S else "NO"
        print(f"{name:<28}{'x'.join(map(str, shape)):>22}{rec['wall']:8.3f}{rec['cpu']:7.3f}"
              f"{rec['rss'] / 2**30:8.2f}  {what}; <= {GOAL_S} s: {quick}")  # fmt: skip
        if refused:
            print(f"{'':<28}{rec['message'][:160]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
