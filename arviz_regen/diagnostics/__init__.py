"""Public convergence diagnostics (exported by :mod:`arviz_regen`).

- :mod:`~arviz_regen.diagnostics.hotelling`: :func:`~arviz_regen.hotelling_rs`;
- :mod:`~arviz_regen.diagnostics.agreement`: :func:`~arviz_regen.chain_agreement`;
- :mod:`~arviz_regen.diagnostics.conditional`: :func:`~arviz_regen.conditional_check`;
- :mod:`~arviz_regen.diagnostics.verdict`, :mod:`~arviz_regen.diagnostics.summary`: the verdict and
  :func:`~arviz_regen.regen_summary`;
- :mod:`~arviz_regen.diagnostics.online`, :mod:`~arviz_regen.diagnostics.monitor_registry`: the
  online stopping rule (:class:`~arviz_regen.StopWhenConverged`);
- :mod:`~arviz_regen.diagnostics.run_length`: how long to run (:func:`~arviz_regen.draws_needed`,
  :class:`~arviz_regen.StopWhenReached`, also with random hyperparameters).

The functions are imported from :mod:`arviz_regen`; this package imports none of its modules
(importing one must not import the others' dependencies, e.g. ArviZ for the summary).
"""
