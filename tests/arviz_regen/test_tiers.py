"""The tiers of ``arviz_regen`` import only downwards: kernels, then xarray, then the public modules.

``base`` (numpy in, numpy out) knows no xarray, ArviZ or pandas; ``xr`` builds on ``base`` only;
``estimates`` on both; ``diagnostics`` on all three; plots, CLI, accessor and compat on top.
Read from the sources' import statements (module level and inside functions), so a lazy import
that runs upwards fails here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "arviz_regen"

#: tier -> the tiers (and third-party packages) it may import
ALLOWED = {
    "base": {"base"},
    "xr": {"base", "xr"},
    "estimates": {"base", "xr", "estimates"},
    "diagnostics": {"base", "xr", "estimates", "diagnostics"},
}
FOREIGN = {"base": {"xarray", "arviz", "pandas", "matplotlib"}, "xr": {"matplotlib"}, "estimates": {"matplotlib"},
           "diagnostics": {"matplotlib"}}  # fmt: skip


def _imports(path):
    """(tier of arviz_regen or None, top-level module) of every import in ``path``."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    package = list(parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")
                yield (top[1] if top[0] == "arviz_regen" and len(top) > 1 else None), top[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # `from .. import x` at the top: x is a tier
                    target = [node.names[0].name]
                yield target[0], "arviz_regen"
            else:
                top = node.module.split(".")
                yield (top[1] if top[0] == "arviz_regen" and len(top) > 1 else None), top[0]


@pytest.mark.parametrize("tier", sorted(ALLOWED))
def test_tier_imports_only_downwards(tier):
    files = sorted((PACKAGE / tier).rglob("*.py"))
    assert files
    bad = []
    for path in files:
        for sub, top in _imports(path):
            if top == "arviz_regen" and sub is not None and sub not in ALLOWED[tier]:
                bad.append(f"{path.relative_to(PACKAGE)} imports arviz_regen.{sub}")
            if top in FOREIGN[tier]:
                bad.append(f"{path.relative_to(PACKAGE)} imports {top}")
    assert not bad, "\n".join(bad)


def test_every_module_is_in_a_tier_or_on_top():
    top_level = {p.name for p in PACKAGE.glob("*.py")}
    assert top_level == {"__init__.py", "accessor.py", "cli.py", "testing.py"}
