"""Every public name of both packages is in the documentation's API reference.

The reference pages (docs/api/*.rst) list names by hand, grouped by topic; this test is what
keeps them complete: a name added to ``__all__`` without a line there fails here. When the site
has been built (``python docs/build.py``) each name must also have its generated page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import arviz_regen
import pymc_partition

DOCS = Path(__file__).resolve().parents[2] / "docs"
PACKAGES = {"pymc_partition": pymc_partition, "arviz_regen": arviz_regen}


def _listed(package: str) -> list[str]:
    text = (DOCS / "api" / f"{package}.rst").read_text()
    assert f".. currentmodule:: {package}" in text
    names = []
    for block in re.findall(r"\.\. autosummary::\n(?:   :[^\n]*\n)*\n((?:   \S[^\n]*\n)+)", text):
        names += [line.strip() for line in block.splitlines()]
    return names


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_public_name_is_in_the_api_reference(package):
    listed = _listed(package)
    public = list(PACKAGES[package].__all__)
    assert not sorted(set(public) - set(listed)), "public names missing from docs/api/" + package + ".rst"
    assert not sorted(set(listed) - set(public)), "names in the reference that are not public"
    assert len(listed) == len(set(listed)), "a name listed twice"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_public_name_has_a_built_page(package):
    built = DOCS / "_build" / "html" / "api" / "generated"
    if not built.is_dir():
        pytest.skip("site not built (python docs/build.py)")
    missing = [n for n in PACKAGES[package].__all__ if not (built / f"{package}.{n}.html").is_file()]
    assert not missing, f"no generated page for {missing}"
