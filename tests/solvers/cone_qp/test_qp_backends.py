"""The CasADi QP backends behind the MDP step (``contactmp.solvers.cone_qp.qp``): an answer depends on the
QP alone, never on the QPs solved before it in the same process."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactmp.solvers.cone_qp.qp import available_qp_solvers, solve_qp

DATA = Path(__file__).resolve().parents[1] / "data" / "mdp_qp_resting_cube.npz"


@pytest.mark.parametrize("backend", ["qpoases", "osqp", "proxqp"])
def test_answer_does_not_depend_on_the_previous_solve(backend):
    """Two QPs of a resting cube's MDP steps (32 friction-polygon weights, one simplex row per
    contact; the Hessian is only semidefinite, so the minimizer is not unique): the first QP solved
    again after the second returns what it returned the first time. A cached qpOASES Function
    hot-started from the second QP and returned a minimizer 0.50 away."""
    if backend not in available_qp_solvers():
        pytest.skip(f"{backend} is not in this CasADi build")
    d = np.load(DATA)
    opts = {"hessian_type": "semidef", "enableRegularisation": True} if backend == "qpoases" else None

    def solve(k: int) -> np.ndarray:
        sol = solve_qp(backend, d[f"H{k}"], d[f"g{k}"], 0.0, np.inf, d[f"A{k}"], -np.inf, 1.0, options=opts)
        assert sol.success, sol.status
        return sol.x

    first = solve(0)
    solve(1)
    np.testing.assert_array_equal(solve(0), first)
    # and it is a minimizer: the objective equals the one of another backend's answer to 1e-9
    f = lambda x: 0.5 * x @ d["H0"] @ x + d["g0"] @ x  # noqa: E731
    reference = solve_qp("qpoases", d["H0"], d["g0"], 0.0, np.inf, d["A0"], -np.inf, 1.0,
                         options={"hessian_type": "semidef", "enableRegularisation": True}).x
    assert abs(f(first) - f(reference)) <= 1e-9 * max(1.0, abs(f(reference)))
