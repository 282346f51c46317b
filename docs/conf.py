"""Sphinx configuration of the pymc-partition / arviz-regen documentation.

Build with ``python docs/build.py`` (warnings are errors). Pages are MyST Markdown; their code
cells are executed by myst-nb at build time, cached in ``docs/_build/.jupyter_cache``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy

import pymc_partition  # noqa: E402

project = "pymc-partition / arviz-regen"
author = "The pymc-partition developers"
copyright = "2026, The pymc-partition developers"
release = pymc_partition.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinx_design",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "build.py"]
templates_path = ["_templates"]

# --- the committed notebook in the gallery -------------------------------------------------
# notebooks/ stays the notebook's home (its jupytext source and builder live there); a copy is
# placed in the gallery at each build and shown with its committed outputs (a full real-data run
# of 3 samplers x 4 x 50,000 draws, about two minutes of sampling and the Arabidopsis file, which
# CI does not have), so it is not executed here: see gallery/index.md.
GALLERY_NOTEBOOKS = ["arabidopsis_convergence.ipynb"]
for name in GALLERY_NOTEBOOKS:
    shutil.copyfile(ROOT / "notebooks" / name, HERE / "gallery" / name)

# --- myst-nb ---------------------------------------------------------------------------------
nb_execution_mode = "cache"
nb_execution_cache_path = str(HERE / "_build" / ".jupyter_cache")
nb_execution_excludepatterns = [f"gallery/{name}" for name in GALLERY_NOTEBOOKS]
nb_execution_timeout = 300
nb_execution_raise_on_error = True  # a failing example fails the build
nb_execution_show_tb = True
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath", "deflist"]
myst_heading_anchors = 3

# --- autodoc / numpydoc ---------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- HTML -------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "pymc-partition"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}
suppress_warnings = ["mystnb.unknown_mime_type"]
