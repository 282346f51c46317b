"""Public diagnostics (xarray results)."""
