"""The dask.distributed plumbing: which client runs the heavy tasks, and how they are sent.

The array kernels of :mod:`arviz_regen.base` stay numpy in, numpy out. The functions that map
them over blocks (of states, of item rows, of pairs, of chains) call :func:`map_blocks` here:
with a ``dask.distributed`` client each block is one task of the client's cluster (the
arrays every block needs are scattered to the workers once), without one the blocks run in
this process, in order. Either way the kernels see the same blocks, so the results are the
same to the last bit.

Which client: the one passed as ``client=``, else the active one (:func:`distributed.default_client`,
the client last created in this process, e.g. by ``Client(LocalCluster())`` or
``Client("tcp://scheduler:8786")``); none when ``distributed`` was never imported. The same code
runs on a ``LocalCluster`` and on a remote scheduler. Inside :func:`using_client` the dask
graphs built by xarray (reading a zarr store, hashing the labels chunk by chunk) run there too.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys

__all__ = [
    "resolve_client",
    "current_client",
    "using_client",
    "map_blocks",
    "hold_blocks",
    "scatter",
    "n_threads",
    "TASK_PREFIX",
]

#: the client set by :func:`using_client` (the active one inside it)
_CURRENT = contextvars.ContextVar("arviz_regen_client", default=None)

#: clients connected by :func:`resolve_client` to scheduler addresses
_CLIENTS = {}

#: prefix of the keys of the tasks sent by :func:`map_blocks` (seen in the dashboard and the
#: task stream)
TASK_PREFIX = "arviz_regen"


def resolve_client(client=None):
    """Return the ``dask.distributed`` client to run on, or None (run in this process).

    Parameters
    ----------
    client : distributed.Client, str, False or None
        A client; a scheduler address (a client is connected to it); ``False``: none, even if
        one is active; None: the active client, if any (never imports ``distributed``).

    Returns
    -------
    distributed.Client or None
    """
    if client is False:
        return None
    if client is None and _CURRENT.get() is not None:
        return _CURRENT.get()
    if client is None:
        dist = sys.modules.get("distributed")
        if dist is None or _on_worker(dist):
            return None  # a task that calls arviz_regen runs its own blocks: no nested graphs
        try:
            return dist.default_client()
        except ValueError:  # no client was created in this process
            return None
    if isinstance(client, str):  # one connection per address and process
        if client not in _CLIENTS or _CLIENTS[client].status in ("closing", "closed"):
            from distributed import Client

            _CLIENTS[client] = Client(client, set_as_default=False)
        return _CLIENTS[client]
    if not (hasattr(client, "submit") and hasattr(client, "scatter") and hasattr(client, "gather")):
        raise TypeError(
            f"`client` must be a dask.distributed Client, a scheduler address or None, got {type(client).__name__}."
        )
    return client


def current_client():
    """Return the client of the enclosing :func:`using_client`, or None."""
    return _CURRENT.get()


def _on_worker(dist):
    try:
        dist.get_worker()
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def using_client(client):
    """Run the dask graphs computed inside on ``client``'s cluster.

    The graphs are those of ``dask.compute`` and ``.values`` of a dask-backed array; ``client`` also becomes the client
    of the functions called inside (:func:`resolve_client`). Nothing changes when ``client`` is None.
    """
    if client is None:
        yield None
        return
    import dask

    token = _CURRENT.set(client)
    try:
        with dask.config.set(scheduler=client):
            yield client
    finally:
        _CURRENT.reset(token)


def map_blocks(func, blocks, *, shared=(), client=None, name=None):
    """``func(*block, *shared)`` for each block, as tasks of ``client``'s cluster when given.

    Parameters
    ----------
    func : callable
        A module-level function (it is pickled to the workers); numpy in, numpy out.
    blocks : sequence of tuple
        The per-task arguments (small: item rows, state keys, chain numbers, ...).
    shared : tuple
        Arguments every task needs (large arrays, sent to the workers once).
    client : distributed.Client or None
        None: every block runs here, in order, when its result is asked for.
    name : str, optional
        Task name (default ``func.__name__``), prefixed with :data:`TASK_PREFIX`.

    Yields
    ------
    The results, in the order of ``blocks``: one at a time, so that a caller that stores each
    before asking for the next holds one block's result at a time (without a client, one
    block's working memory too).
    """
    blocks = [tuple(b) for b in blocks]
    if client is None:
        for block in blocks:
            yield func(*block, *shared)
        return
    from dask.base import tokenize

    label = f"{TASK_PREFIX}-{name or func.__name__}"
    # scattered without hashing (large arrays); every worker that runs a block fetches them once
    futures = client.scatter(list(shared), hash=False) if shared else []
    token = tokenize(label, len(blocks), [f.key for f in futures], id(func))
    tasks = [
        client.submit(func, *block, *futures, key=f"{label}-{token}-{i}", pure=False, retries=1)
        for i, block in enumerate(blocks)
    ]
    try:
        for task in tasks:
            yield task.result()
            task.release()
    finally:
        for fut in tasks + list(futures):
            fut.release()


def hold_blocks(func, blocks, *, shared=(), client=None, name=None):
    """``[func(*block, *shared) for block in blocks]`` left on the workers of ``client``'s cluster.

    Returns the futures of the results (computed here without a client), for later tasks that
    take them as arguments (:func:`map_blocks` blocks may hold futures, also in lists): data
    made and used by the workers never passes through this process.
    """
    blocks = [tuple(b) for b in blocks]
    if client is None:
        return [func(*block, *shared) for block in blocks]
    from dask.base import tokenize

    label = f"{TASK_PREFIX}-{name or func.__name__}"
    futures = client.scatter(list(shared), hash=False) if shared else []
    token = tokenize(label, len(blocks), [f.key for f in futures], id(func))
    return [client.submit(func, *block, *futures, key=f"{label}-{token}-{i}", pure=False, retries=1)
            for i, block in enumerate(blocks)]  # fmt: skip


def scatter(values, client=None):
    """Hold ``values`` (a list) on the workers of ``client``'s cluster.

    For tasks that reuse them over several :func:`map_blocks` calls; unchanged without a client.
    """
    if client is None:
        return list(values)
    return client.scatter(list(values), hash=False)


def n_threads(client):
    """Worker threads of ``client``'s cluster (1 without a client): how many blocks keep it busy."""
    if client is None:
        return 1
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - a scheduler that does not answer: no splitting
        return 1
