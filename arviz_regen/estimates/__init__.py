"""Public summaries of partition draws (exported by :mod:`arviz_regen`).

- :mod:`~arviz_regen.estimates.rs_estimate`: :func:`~arviz_regen.rs_estimate`,
  :func:`~arviz_regen.top_states`;
- :mod:`~arviz_regen.estimates.coclustering`: :func:`~arviz_regen.coclustering`;
- :mod:`~arviz_regen.estimates.point_estimate`, :mod:`~arviz_regen.estimates.credible_ball`,
  :mod:`~arviz_regen.estimates.consensus`: point estimates of the partition and their uncertainty;
- :mod:`~arviz_regen.estimates.traces`: :func:`~arviz_regen.partition_traces`.

The functions are imported from :mod:`arviz_regen`; this package imports none of its modules,
so ``arviz_regen.estimates.coclustering`` is always the module (the function has its name).
"""
