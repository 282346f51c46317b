"""ArviZ: ``az.hotelling_rs`` and the other public functions on the ``arviz`` namespace.

Why a hook: ArviZ has no registry for third-party diagnostics, so the names are set on the
``arviz`` module itself, next to ``az.rhat`` and ``az.ess``. A name ArviZ defines itself is never
replaced. Both generations are served: ArviZ 0.x (``arviz.InferenceData``) and 1.x (the
``arviz`` meta-package over arviz-base, arviz-stats and arviz-plots); a later major version is
refused with a warning, since what ``arviz`` exports may change there.
"""

from __future__ import annotations

import importlib
import warnings

__all__ = ["ARVIZ_NAMES", "SUPPORTED_MAJORS", "register", "unregister"]

#: names put on the ``arviz`` namespace
ARVIZ_NAMES = (
    "hotelling_rs",
    "chain_agreement",
    "conditional_check",
    "partition_traces",
    "coclustering",
    "rs_estimate",
    "regen_summary",
    "plot_hotelling_rs",
    "plot_coclustering",
    "plot_coclustering_trace",
    "plot_top_states",
)

#: the ArviZ major versions whose namespace is known to have none of these names
SUPPORTED_MAJORS = (0, 1)


def _ours(obj):
    return getattr(obj, "__module__", "").startswith("arviz_regen")


def register(az=None):
    """Put the public functions of :mod:`arviz_regen` on the ``arviz`` namespace.

    Called by ``import arviz_regen``; calling it again is harmless.

    Parameters
    ----------
    az : module, optional
        The ``arviz`` module; default: imported here.

    Returns
    -------
    list of str
        The names set (empty when ArviZ is missing or refused).
    """
    if az is None:
        try:
            az = importlib.import_module("arviz")
        except ImportError:  # ArviZ is optional here: the functions work without it
            return []
    major = _major(az)
    if major not in SUPPORTED_MAJORS:
        warnings.warn(f"arviz_regen does not extend ArviZ {az.__version__} (supported: {SUPPORTED_MAJORS}); "
                      "call arviz_regen.hotelling_rs etc. directly", RuntimeWarning, stacklevel=2)  # fmt: skip
        return []
    import arviz_regen

    done = []
    for name in ARVIZ_NAMES:
        existing = getattr(az, name, None)
        if existing is None or _ours(existing):  # never shadow a name ArviZ itself defines
            setattr(az, name, getattr(arviz_regen, name))
            done.append(name)
    return done


def unregister(az=None):
    """Remove the names :func:`register` set (those ArviZ defines itself stay)."""
    az = importlib.import_module("arviz") if az is None else az
    for name in ARVIZ_NAMES:
        if _ours(getattr(az, name, None)):
            delattr(az, name)


def _major(az):
    try:
        return int(str(az.__version__).split(".")[0])
    except (AttributeError, ValueError):
        return None
