"""``arviz-regen-summary`` on a file that is not a store of draws (issue 26, case 10): exit status 2
and a message saying so, not xarray's "consider installing additional IO dependencies"."""

from __future__ import annotations

import numpy as np

from arviz_regen.cli import main


def test_a_random_or_empty_nc_file_is_named_as_not_draws(tmp_path, capsys):
    for name, content in (("random.nc", np.random.default_rng(0).bytes(4096)), ("empty.nc", b"")):
        path = tmp_path / name
        path.write_bytes(content)
        assert main([str(path)]) == 2
        err = capsys.readouterr().err
        assert "is not a netCDF file of draws" in err or "not a valid NetCDF" in err, err
        assert "IO dependencies" not in err
