"""Hooks into other libraries (ArviZ, xarray), one module per library."""
