"""Shared test fixtures: where the shared test data lives."""
from __future__ import annotations

import os

# Speed only, not correctness: the problems are small and dense, and BLAS threads only contend for
# the cores (set before numpy loads; a value already in the environment wins). Nothing depends on
# it: tolerances that rest on rounding are derived from condition numbers or residual bounds, and
# iteration caps from the methods' own budgets, so the suite also passes with, e.g.,
# OPENBLAS_NUM_THREADS=2 and with other BLAS kernels (OPENBLAS_CORETYPE) or numba targets.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONTACTMP_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of test problems written by others (``../shared/data``)."""
    if not DATA.is_dir():
        pytest.fail(f"shared test data not found at {DATA}; set CONTACTMP_SHARED")
    return DATA
