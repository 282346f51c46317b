"""The package as it was at a git revision, for the benchmarks' comparisons with a previous revision."""

from __future__ import annotations

import os
import subprocess

#: the repository's root (this folder's parent)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_tree(rev, dest, paths=()):
    """Write ``paths`` (default: the whole tree) of git revision ``rev`` into the folder ``dest``; return ``dest``.

    ``git archive`` piped into ``tar -x``: no ``.git`` and no caches, so the copy compiles its own
    kernels. Raises :class:`subprocess.CalledProcessError` or :class:`OSError` if git or the
    revision is missing.
    """
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, *paths], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest
