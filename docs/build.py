"""Build the documentation site: ``python docs/build.py [extra sphinx arguments]``.

The one command CI runs (``.ci/run``) and CONTRIBUTING.md documents. It is

    python -m sphinx -W --keep-going -b html docs docs/_build/html

with this checkout first on the path of Sphinx and of the kernels that execute the pages, so the
site documents and runs the code beside it. Warnings are errors. Exit status is Sphinx's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
OUT = DOCS / "_build" / "html"


def main(argv: list[str]) -> int:
    """Run Sphinx on docs/ with warnings as errors; return its exit status."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(OUT), *argv]
    start, cpu = time.perf_counter(), os.times()
    status = subprocess.call(cmd, cwd=ROOT, env=env)
    end = os.times()
    cpu_s = (end.children_user - cpu.children_user) + (end.children_system - cpu.children_system)
    print(f"docs build exit {status} in {time.perf_counter() - start:.0f} s ({cpu_s:.0f} s CPU); site in {OUT}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
