"""The ``random_seed`` argument of the public functions, and the names it replaces.

Every public function that draws random numbers takes ``random_seed`` (an int or a
``numpy.random.Generator``), as ``pm.sample`` does. The older names (``seed``) are accepted for
one release with a ``DeprecationWarning``, and give the same draws.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["random_seed_argument", "seed_attribute"]

#: netCDF attributes hold integers of at most 64 bits
_INT64 = 2**63


def random_seed_argument(random_seed, old, *, old_name="seed", default=None, stacklevel=3):
    """Return the seed a public function uses: ``random_seed``, or ``old`` given under ``old_name``.

    Parameters
    ----------
    random_seed : int, numpy.random.Generator or None
        The argument under its current name (None: not given).
    old : int, numpy.random.Generator or None
        The argument under its deprecated name (None: not given).
    old_name : str
        The deprecated name, for the messages.
    default : int or None
        The seed when neither is given.
    stacklevel : int
        Of the warning: 3 points at the caller of the public function.

    Returns
    -------
    int, numpy.random.Generator or None

    Raises
    ------
    TypeError
        When both names are given.
    """
    if old is None:
        return default if random_seed is None else random_seed
    if random_seed is not None:
        raise TypeError(f"give random_seed only (`{old_name}` is its deprecated name), not both")
    warnings.warn(f"`{old_name}` is deprecated and will be removed in the next release: use random_seed "
                  "(same meaning, same draws)", DeprecationWarning, stacklevel=stacklevel)  # fmt: skip
    return old


def seed_attribute(seed, missing=None):
    """Return ``seed`` as a result's attribute, which netCDF and zarr both hold.

    Parameters
    ----------
    seed : int, numpy.random.Generator or None
        The seed a public function used.
    missing : int or None
        The attribute for a seed that is not an integer (a Generator, None).

    Returns
    -------
    int, str or None
        The integer; beyond 64 bits (a 128-bit seed from ``secrets.randbits(128)``, as numpy
        advises) its decimal string: ``int(attribute)`` gives the seed back.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        return missing
    seed = int(seed)
    return seed if -_INT64 <= seed < _INT64 else str(seed)
