"""The draws-together kernel (:mod:`arviz_regen.base.together_counts`) against the literal count.

Chains where few items move, where clusters merge, split or swap labels wholesale (the cluster
vote then has ties and conflicts, which may cost time but never exactness), single-draw chains,
chains that never move, and several chains at once: the counts must equal, as exact integers,
Σ_t 1{i, j together at draw t}.
"""

import numpy as np
import pytest

from arviz_regen.base.together_counts import TOGETHER_WORK_ROWS, together_counts


def literal(index, ulabels):
    lab = ulabels[index.ravel()]
    return (lab[:, :, None] == lab[:, None, :]).sum(axis=0)


def run(index, ulabels):
    n = ulabels.shape[1]
    acc = np.zeros((n, n))
    together_counts(np.ascontiguousarray(index, dtype=np.int64), np.ascontiguousarray(ulabels, dtype=np.int64),
                    acc, np.zeros((TOGETHER_WORK_ROWS, n + 1), dtype=np.int64))  # fmt: skip
    got = acc + acc.T
    got[np.diag_indices(n)] = index.size
    return got


def chains(rng, n, n_chain, m, moves):
    """Labels (n_chain, m, n) in 0 … n − 1: each draw applies one move to the previous draw."""
    out = np.empty((n_chain, m, n), dtype=np.int64)
    for c in range(n_chain):
        cur = rng.integers(0, min(n, 4), n)
        for t in range(m):
            kind = rng.choice(moves)
            cur = cur.copy()
            if kind == "few":
                k = rng.integers(1, 3)
                cur[rng.integers(0, n, k)] = rng.integers(0, n, k)
            elif kind == "merge":
                a, b = rng.choice(np.unique(cur), 2) if np.unique(cur).size > 1 else (cur[0], cur[0])
                cur[cur == a] = b
            elif kind == "split":
                a = rng.choice(cur)
                half = (cur == a) & (rng.random(n) < 0.5)
                cur[half] = rng.integers(0, n)
            elif kind == "relabel":  # the same partition under other labels
                cur = rng.permutation(n)[cur]
            elif kind == "all":
                cur = rng.integers(0, min(n, 5), n)
            out[c, t] = cur
    return out


@pytest.mark.parametrize("moves", [("stay", "few"), ("few", "merge", "split"), ("relabel", "few"), ("all", "stay"),
                                   ("stay", "few", "merge", "split", "relabel", "all")])  # fmt: skip
@pytest.mark.parametrize("seed", range(4))
def test_counts_equal_the_literal_count(moves, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 16))
    n_chain, m = int(rng.integers(1, 4)), int(rng.choice([1, 2, 5, 40]))
    labels = chains(rng, n, n_chain, m, moves)
    ulabels, index = np.unique(labels.reshape(-1, n), axis=0, return_inverse=True)
    index = index.reshape(n_chain, m)
    np.testing.assert_array_equal(run(index, ulabels), literal(index, ulabels))


def test_repeated_states_and_revisits():
    # A B A A C A: the kernel reads the same state rows again (runs and revisits)
    ulabels = np.array([[0, 0, 1, 1, 2], [0, 1, 1, 2, 2], [0, 0, 0, 0, 0]])
    index = np.array([[0, 1, 0, 0, 2, 0], [2, 2, 2, 1, 1, 0]])
    np.testing.assert_array_equal(run(index, ulabels), literal(index, ulabels))


def test_accumulates_into_acc():
    # counts add to what acc holds (callers may sum several calls)
    ulabels = np.array([[0, 0, 1], [0, 1, 1]])
    index = np.array([[0, 1, 1, 0]])
    n = 3
    acc = np.full((n, n), 5.0)
    together_counts(index, ulabels, acc, np.zeros((TOGETHER_WORK_ROWS, n + 1), dtype=np.int64))
    total = acc + acc.T - 10.0
    want = literal(index, ulabels)
    np.testing.assert_array_equal(total[~np.eye(n, dtype=bool)], want[~np.eye(n, dtype=bool)])
