"""Array kernels: numpy in, numpy out, compiled with numba where it pays.

Nothing here imports xarray, ArviZ or pandas; the modules take label arrays, state indices, tour
boundaries and sums, and return arrays, named tuples or scalars. Higher tiers
(:mod:`arviz_regen.xr`, then the public modules) convert inputs and attach dims and attrs.

- :mod:`~arviz_regen.base.state`: canonical labels (restricted growth strings), compact state keys;
- :mod:`~arviz_regen.base.tours`, :mod:`~arviz_regen.base.batch_means`,
  :mod:`~arviz_regen.base.autocorrelation`: regenerative and batch-means means and errors;
- :mod:`~arviz_regen.base.hotelling_t2`, :mod:`~arviz_regen.base.tour_t2`,
  :mod:`~arviz_regen.base.tour_tests`, :mod:`~arviz_regen.base.tour_bootstrap`: the Hotelling-RS
  statistic and its tour-bootstrap reference;
- :mod:`~arviz_regen.base.pair_counts`, :mod:`~arviz_regen.base.pair_sums`: per-pair sums for
  co-clustering;
- :mod:`~arviz_regen.base.partition_loss`, :mod:`~arviz_regen.base.salso`,
  :mod:`~arviz_regen.base.salso_ops`, :mod:`~arviz_regen.base.cluster_match`,
  :mod:`~arviz_regen.base.cluster_tracks`, :mod:`~arviz_regen.base.track_scan`: losses and the
  SALSO search;
- :mod:`~arviz_regen.base.addresses`: the one place compiled kernels get raw addresses (checked);
- :mod:`~arviz_regen.base.conditional`: the conditional (discrete Stein) check's test;
- :mod:`~arviz_regen.base.lazy_jit`: ``lazy_njit`` (numba imported on first use);
- :mod:`~arviz_regen.base.blas`: ``one_blas_thread`` (the diagnostics' small products on one BLAS thread).
"""
