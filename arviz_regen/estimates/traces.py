"""Scalar traces of a partition-valued chain that see the whole partition, for R-hat and ESS.

R-hat and ESS need real-valued draws. ``n_clusters`` and ``partition_logp`` are such traces,
but they are blind to *which* items cluster together: chains trapped in two different
clusterings of the same sizes give them the same distribution. The distance of each draw to a
few reference partitions sees the whole partition: under variation of information (VI) and
Binder's loss (the number of item pairs on which two partitions disagree), chains in different
modes sit at different distances from a reference near one of them.

References. They must treat all chains alike, or a chain's own reference would make it look
closer to it than the others (a between-chain difference created by the choice): they are the
medoids of a 2-medoids clustering, under VI, of a thinned sample of the pooled draws (the same
draw positions in every chain). Chains trapped in two modes give one medoid in each; correct
chains give two central draws.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..base.partition_loss import _losses, parse_loss
from ..base.state import canonicalize, keys_to_labels
from ..xr.distributed import map_blocks, resolve_client, using_client
from ..xr.draws import load_partition

__all__ = ["reference_partitions", "partition_traces", "k_medoids", "state_traces", "REFERENCE_SAMPLE", "N_REFERENCES"]

#: most draws of the thinned pooled sample from which the reference partitions are chosen
REFERENCE_SAMPLE = 120
#: reference partitions (medoids) by default
N_REFERENCES = 2
#: losses of the distance traces by default
LOSSES = ("VI", "binder")
#: labels (states × items) per block of :func:`state_traces`: bounds the memory of a block, and
#: the blocks are the tasks of a dask.distributed cluster. Fixed, so that the blocks (and the
#: results, to the last bit) are the same with and without a cluster.
STATE_BLOCK_LABELS = 1 << 21


def state_traces(keys, n_items, refs, specs):
    """Distances of states to the references, and their numbers of clusters (numpy kernel).

    Parameters
    ----------
    keys : numpy.ndarray, shape (S,)
        State keys (:func:`arviz_regen.base.state.state_keys`) of a block of states.
    n_items : int
    refs : numpy.ndarray of int64, shape (R, n_items)
        Canonical reference partitions.
    specs : sequence of Loss

    Returns
    -------
    numpy.ndarray, shape (len(specs) * R + 1, S)
        The distance of each state to each reference, loss by loss, then its number of clusters.
    """
    labels = np.ascontiguousarray(keys_to_labels(keys, n_items))
    rows = [_losses(refs, labels, spec) for spec in specs]
    rows.append((labels.max(axis=1) + 1).astype(float)[None])
    return np.concatenate(rows, axis=0)


def k_medoids(D, k, max_iter=100):
    """Medoids of a k-medoids clustering of a distance matrix (deterministic).

    Start: the 1-medoid (smallest total distance), then farthest-first (each next start is the
    point farthest from the starts so far). Then alternate: assign every point to its nearest
    medoid, move each medoid to the member with the smallest total distance to its cluster;
    stop when the medoids no longer change. Ties go to the lowest index.

    Parameters
    ----------
    D : numpy.ndarray, shape (M, M)
        Symmetric distances.
    k : int

    Returns
    -------
    numpy.ndarray of int, shape (min(k, M),)
        Indices of the medoids.
    """
    D = np.asarray(D, dtype=float)
    M = D.shape[0]
    k = min(int(k), M)
    med = [int(np.argmin(D.sum(axis=1)))]
    while len(med) < k:
        med.append(int(np.argmax(D[:, med].min(axis=1))))
    med = np.array(med)
    for _ in range(max_iter):
        assign = np.argmin(D[:, med], axis=1)
        new = med.copy()
        for j in range(k):
            members = np.flatnonzero(assign == j)
            if members.size:
                new[j] = members[np.argmin(D[np.ix_(members, members)].sum(axis=1))]
        if np.array_equal(new, med):
            break
        med = new
    return med


def _sample_states(pdraws, max_draws):
    """State indices of the thinned pooled sample: the same draw positions in every chain."""
    per_chain = max(1, int(max_draws) // pdraws.n_chain)
    pos = np.unique(np.linspace(0, pdraws.n_draw - 1, min(per_chain, pdraws.n_draw)).round().astype(np.int64))
    return np.unique(pdraws.index[:, pos].ravel())


def reference_partitions(pdraws, n_references=N_REFERENCES, max_draws=REFERENCE_SAMPLE):
    """Return the reference partitions for the distance traces: medoids (VI) of a thinned pooled sample.

    Parameters
    ----------
    pdraws : PartitionDraws
    n_references : int
    max_draws : int
        Most draws in the sample (spread evenly over the chains and along them).

    Returns
    -------
    numpy.ndarray of int64, shape (≤ n_references, n_items)
        Canonical labels; fewer rows when the sample holds fewer distinct states.
    """
    states = _sample_states(pdraws, max_draws)
    labels = np.ascontiguousarray(keys_to_labels(pdraws.keys[states], pdraws.n_items))  # not all states' labels
    D = _losses(labels, labels, parse_loss("VI"))
    D = np.maximum((D + D.T) / 2.0, 0.0)  # symmetric up to rounding
    return labels[k_medoids(D, n_references)]


def partition_traces(
    data,
    var_names=None,
    *,
    references=None,
    n_references=N_REFERENCES,
    losses=LOSSES,
    logp_var="partition_logp",
    logp=None,
    coords=None,
    client=None,
):
    """Scalar traces of a partition chain for R-hat and ESS: distances to references, n_clusters, logp.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, dict or array
        Posterior labels ``(chain, draw, item)``; see :func:`arviz_regen.hotelling_rs`.
    var_names : str or list of one str, optional
        The partition variable.
    references : array_like of int, shape (m, n_items), optional
        Reference partitions; default :func:`reference_partitions` (medoids of the pooled draws).
    n_references : int
        Number of medoids when ``references`` is not given.
    losses : sequence of {"VI", "binder"} (or (name, a))
        Distances of each draw to each reference.
    logp_var : str
        ``sample_stats`` variable with the log posterior (included when present).
    logp : array_like, optional
        Log posterior ``(chain, draw)`` for inputs without sample_stats.
    coords : dict, optional
        Selection of chains and draws applied first.
    client : distributed.Client, str or None, optional
        The ``dask.distributed`` cluster that computes the distances, block by block of
        distinct states (reading and hashing dask-backed labels too): a client, a scheduler
        address, or None for the active client if there is one (else this process); ``False``:
        this process. The results do not depend on it.

    Returns
    -------
    xarray.Dataset
        Variables with dims ``(chain, draw)``: ``vi_ref0``, ``vi_ref1``, ``binder_ref0``, … (the
        distance of each draw to each reference: VI in bits, Binder as the number of item pairs
        on which they disagree), ``n_clusters`` and ``partition_logp`` (when available). The
        reference partitions are the coordinate ``reference_labels`` (``reference``, item), not a
        variable, so the dataset goes straight to ``az.rhat``, ``az.ess`` or ``az.summary``.

    Examples
    --------
    Exact draws of four partitions of three items with known probabilities, two chains, as
    ``(chain, draw, item)`` labels with the log posterior of each draw (an InferenceData or
    DataTree from ``pm.sample`` is read the same way, with ``var_names="z"``):

    >>> import numpy as np, arviz_regen
    >>> states = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [0, 1, 2]])
    >>> probs = np.array([0.4, 0.3, 0.2, 0.1])
    >>> pick = np.random.default_rng(0).choice(4, p=probs, size=(2, 2000))
    >>> labels, logp = states[pick], np.log(probs)[pick]
    >>> import arviz as az
    >>> traces = arviz_regen.partition_traces(labels, logp=logp)
    >>> sorted(traces.data_vars)
    ['binder_ref0', 'binder_ref1', 'n_clusters', 'partition_logp', 'vi_ref0', 'vi_ref1']
    >>> rhat = az.rhat(traces)                   # straight to ArviZ
    >>> bool(float(rhat["vi_ref0"]) < 1.01)
    True
    """
    client = resolve_client(client)
    with using_client(client):
        pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    if references is None:
        refs = reference_partitions(pdraws, n_references)
    else:
        refs = np.atleast_2d(np.asarray(references, dtype=np.int64))
        if refs.shape[1] != pdraws.n_items:
            raise ValueError(f"`references` must have {pdraws.n_items} items per row, got shape {refs.shape}.")
        refs = canonicalize(refs)
    specs = [parse_loss(loss) for loss in losses]
    refs = np.ascontiguousarray(refs, dtype=np.int64)
    step = max(1, STATE_BLOCK_LABELS // max(1, pdraws.n_items))
    blocks = [(pdraws.keys[s : s + step],) for s in range(0, pdraws.n_states, step)]
    per_state = np.concatenate(
        list(map_blocks(state_traces, blocks, shared=(pdraws.n_items, refs, specs), client=client)), axis=1
    )  # (losses × references + 1, states)
    data_vars = {}
    for i, spec in enumerate(specs):
        name = spec.label.lower().replace("(a=", "_a").replace(")", "")
        for r in range(refs.shape[0]):
            data_vars[f"{name}_ref{r}"] = (("chain", "draw"), per_state[i * refs.shape[0] + r][pdraws.index])
    data_vars["n_clusters"] = (("chain", "draw"), per_state[-1][pdraws.index])
    if pdraws.logp_draws is not None:  # of the joint chain when hyperparameters were sampled
        data_vars[pdraws.logp_name] = (("chain", "draw"), pdraws.logp_draws)
    # a coordinate, not a variable: ArviZ's rhat/ess refuse variables without (chain, draw)
    ds = xr.Dataset(
        data_vars,
        coords={
            "chain": pdraws.chain,
            "draw": pdraws.draw,
            "reference": np.arange(refs.shape[0]),
            pdraws.item_dim: pdraws.item_coord,
            "reference_labels": (("reference", pdraws.item_dim), refs),
        },
    )
    ds.attrs.update(
        {
            "var_name": pdraws.name,
            "references": "given"
            if references is not None
            else f"{refs.shape[0]}-medoids (VI) of a thinned pooled sample",
        }
    )
    return ds
