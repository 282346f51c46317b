"""Hooks into other libraries' internals, one module per library, each version-gated.

- :mod:`pymc_partition.compat.pymc`: step-method registration, refusal of generic steps for
  partitions, convergence checks without the labels (installed when the step methods are
  imported);
- :mod:`pymc_partition.compat.pytensor`: where PyTensor writes generated source (PyTensor < 3.3),
  and a hook run when PyTensor compiles a graph for numba.

Each module says why the hook exists, for which versions, and has a test in
``tests/pymc_partition/compat/`` that fails when an upstream release breaks it or makes it
unnecessary.
"""
