"""Shared test fixtures: the test data in the repository, and NOSBENCH when the user has it."""
from __future__ import annotations

import os

# No thread variables are set here: the suite runs with the machine's own BLAS threads, as a user's
# would. Tolerances that rest on rounding are derived from condition numbers or residual bounds, and
# iteration caps from the methods' own budgets, so it passes with any OPENBLAS_NUM_THREADS.
from pathlib import Path

import pytest

from contactmp.nosbench import NOSBENCH_ENV, NOSBENCH_FETCH

REPO = Path(__file__).resolve().parents[1]
#: the Siconos and Pyomo problems shipped with the repository (see tests/data/README.md)
DATA = REPO / "tests" / "data"


def nosbench_folder(subset: str = "nosbench") -> Path | None:
    """``$CONTACTMP_NOSBENCH/<subset>`` when the variable is set and that folder exists, else None."""
    root = os.environ.get(NOSBENCH_ENV)
    if not root:
        return None
    folder = Path(root) / subset
    return folder if folder.is_dir() else None


def nosbench_skip_reason(subset: str = "nosbench") -> str:
    """Why a test that needs the NOSBENCH subset ``subset`` skips (names the fetch command)."""
    root = os.environ.get(NOSBENCH_ENV)
    where = (f"{NOSBENCH_ENV}={root} has no {subset}/ folder" if root else f"{NOSBENCH_ENV} is not set")
    return (f"NOSBENCH data not present ({where}); NOSBENCH states no licence, so it is not in the "
            f"repository: run `{NOSBENCH_FETCH}` and set {NOSBENCH_ENV}=DEST (the folder that "
            f"contains {subset}/)")


@pytest.fixture(scope="session")
def repo_data() -> Path:
    """The folder of test problems written by others and shipped in the repository (``tests/data``)."""
    if not DATA.is_dir():
        pytest.fail(f"the repository's test data is missing: {DATA}")
    return DATA


@pytest.fixture(scope="session")
def nosbench_data() -> Path:
    """The NOSBENCH ``nosbench/`` folder under ``$CONTACTMP_NOSBENCH``; skips the test when absent."""
    folder = nosbench_folder("nosbench")
    if folder is None:
        pytest.skip(nosbench_skip_reason("nosbench"))
    return folder
