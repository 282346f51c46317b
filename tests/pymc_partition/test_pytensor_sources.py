"""PyTensor's generated source goes to its compile directory, not the system temp directory."""

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_COMPILE = """
import numpy as np, pytensor, pytensor.tensor as pt
import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.spec import PartitionSpec
from pymc_partition._pytensor_modes import compile_function
from pymc_partition._pytensor_sources import source_folder

y = np.random.default_rng(0).normal(size=6)
family = pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0)
family.log_marginal_numpy(family.item_stats(y))
spec = PartitionSpec.from_data(pmp.DirichletProcess(1.0), family, y)
PartitionKernel.from_spec(spec, MoveMix(n_gibbs=1, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1))
x = pt.dvector("x")  # a graph of its own, so something is generated even with warm caches
compile_function([x], pt.exp(x) * {salt} + pt.log1p(x))(np.ones(3))
print("FOLDER", source_folder())
"""


def test_compilations_leave_nothing_in_the_system_temp_dir(tmp_path):
    """A fresh process compiles a family's log marginal, a sampler kernel and a graph of its own
    with TMPDIR pointing to an empty folder: the folder is still empty when it has exited (PyTensor
    writes each generated function's source to a new file in the temp dir and never removes it)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    code = _COMPILE.format(salt=float(abs(hash(str(tmp_path))) % 1000 + 1))
    started = time.time()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in tmp.iterdir()) == []
    folder = Path(proc.stdout.split("FOLDER ")[1].strip())
    assert folder.is_dir() and tmp not in folder.parents
    # PyTensor without `generated_src_dir` names the files at random: this process's are gone
    assert not [p for p in folder.glob("pmp_src_*") if p.stat().st_mtime >= started - 1]


_REMOVED = """
import shutil, numpy as np, pytensor.tensor as pt
from pymc_partition._pytensor_modes import compile_function
from pymc_partition._pytensor_sources import source_folder

shutil.rmtree(source_folder())  # what PyTensor 2's module cache does to an empty folder
x = pt.dvector("x")
print(compile_function([x], pt.exp(x) * {salt} + pt.sin(x))(np.ones(2)))
"""


def test_a_removed_folder_is_made_again(tmp_path):
    """PyTensor 2's module cache removes empty folders of its compile directory, the source folder
    among them once earlier processes removed their files: compiling afterwards still works
    (it raised FileNotFoundError, e.g. in every pm.sample with a random hyperparameter)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    code = _REMOVED.format(salt=float(abs(hash(str(tmp_path))) % 1000 + 1))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
