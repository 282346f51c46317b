"""What an install gets: every source folder is a package, every imported library is declared."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("arviz_regen", "pymc_partition")


def _project():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _import_name(requirement):
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].replace("-", "_").lower()


def _third_party_imports():
    """{module: module-level?} of the libraries the sources import."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            top_level = {id(node) for node in tree.body}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found[top] = found.get(top, False) or id(node) in top_level
    return found


def test_every_source_folder_is_a_package():
    for package in PACKAGES:
        for folder in [ROOT / package, *(p for p in (ROOT / package).rglob("*") if p.is_dir())]:
            if folder.name != "__pycache__" and any(folder.glob("*.py")):
                assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"


def test_declared_dependencies_match_the_imports():
    project = _project()
    required = {_import_name(r) for r in project["dependencies"]}
    optional = {_import_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    for module, module_level in sorted(_third_party_imports().items()):
        assert module in required | optional, f"{module} is imported but not declared"
        if module_level:  # imported whenever its module is: a required dependency
            assert module in required, f"{module} is imported at module level but only optional"
