"""The ArviZ hook: ``import arviz_regen`` puts the public functions on ``arviz``, and only there
where ArviZ has nothing of that name. Fails when an ArviZ release breaks the hook (an unknown
major version) or makes it unnecessary or harmful (ArviZ defines one of the names itself)."""

from __future__ import annotations

import subprocess
import sys
import types

import arviz as az

import arviz_regen
from arviz_regen.compat import arviz as compat_arviz


def test_import_registers_every_name_on_arviz():
    for name in compat_arviz.ARVIZ_NAMES:
        assert getattr(az, name) is getattr(arviz_regen, name), name


def test_installed_arviz_is_a_supported_major_and_defines_none_of_the_names():
    assert int(az.__version__.split(".")[0]) in compat_arviz.SUPPORTED_MAJORS
    code = (
        "import arviz as az\n"
        f"print([n for n in {list(compat_arviz.ARVIZ_NAMES)!r} if hasattr(az, n)])\n"
    )  # a fresh ArviZ, before arviz_regen is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_register_never_shadows_and_refuses_an_unknown_major():
    fake = types.SimpleNamespace(__version__="1.2.0", hotelling_rs="arviz's own")
    done = compat_arviz.register(fake)
    assert fake.hotelling_rs == "arviz's own" and "hotelling_rs" not in done
    assert fake.coclustering is arviz_regen.coclustering
    assert compat_arviz.register(fake) == done  # idempotent
    compat_arviz.unregister(fake)
    assert not hasattr(fake, "coclustering") and fake.hotelling_rs == "arviz's own"
    future = types.SimpleNamespace(__version__="2.0.0")
    import pytest

    with pytest.warns(RuntimeWarning, match="does not extend ArviZ 2.0.0"):
        assert compat_arviz.register(future) == []
    assert not hasattr(future, "hotelling_rs")
