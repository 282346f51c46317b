"""``pymc_partition`` uses only the public surface of ``arviz_regen``.

Every ``arviz_regen`` import in ``pymc_partition`` names public modules (no leading underscore)
and only names listed in that module's ``__all__`` (or the package's own public names).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pymc_partition

SOURCE = Path(pymc_partition.__file__).resolve().parent


def _regen_imports():
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] == "arviz_regen":
                yield path, node.module, [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "arviz_regen":
                        yield path, alias.name, []


def test_only_public_names_are_imported():
    seen = 0
    for path, module, names in _regen_imports():
        seen += 1
        where = f"{path.relative_to(SOURCE)}: from {module} import {', '.join(names)}"
        assert not any(part.startswith("_") for part in module.split(".")), where
        mod = importlib.import_module(module)
        public = set(getattr(mod, "__all__", ()))
        for name in names:
            if hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None:
                assert not name.startswith("_"), where  # a submodule
            else:
                assert name in public, f"{where}: {name} is not in {module}.__all__"
    assert seen >= 5  # the scan finds the imports (state, containers, online, plots, ...)
