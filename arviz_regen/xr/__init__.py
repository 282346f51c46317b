"""The xarray tier: input conversion and validation, and results with dims and attrs.

- :mod:`~arviz_regen.xr.containers`: InferenceData (ArviZ 0.x) and DataTree (ArviZ 1.x) behind
  one small API (``get_group``, ``add_group``, ``group_names``, ...), public for ``pymc_partition``;
- :mod:`~arviz_regen.xr.draws`: anything ArviZ accepts -> per-draw state indices
  (:class:`~arviz_regen.xr.draws.PartitionDraws`);
- :mod:`~arviz_regen.xr.regeneration`: tours of every chain, RS estimates and their Datasets.
"""
