"""Shared test fixtures: where the shared test data lives."""
from __future__ import annotations

import os

# No thread variables are set here: the suite runs with the machine's own BLAS threads, as a user's
# would. Tolerances that rest on rounding are derived from condition numbers or residual bounds, and
# iteration caps from the methods' own budgets, so it passes with any OPENBLAS_NUM_THREADS.
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
