"""Smoothed (relaxed, Dojo-style) derivatives: ``program_sensitivity(..., smoothing=kappa)``
differentiates the relaxed problem ``a b = kappa`` at its solution.

Checked: against central differences of the relaxed solutions themselves (``smoothed_solution``
re-solved at p +/- 1e-6; the relaxed system is smooth, its Newton solves stop at 1e-10 relative, so
the difference's rounding error is ~1e-10 / 1e-6 = 1e-4 of the solution's scale at worst and about
1e-8 in practice: bound 1e-6), the limit kappa -> 0 on a piece (the error falls linearly in
kappa), and a degenerate point (finite, not flagged, between the one-sided derivatives).
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.step_sensitivity import program_sensitivity, smoothed_solution, step_jacobian
from contactmp.models.systems import box_2d, point_mass_2d
from contactmp.program import Program
from contactmp.solvers.registry import solve_lcp
from contactmp.transcriptions.time_stepping import TimeStepping


def _lcp_program(M: np.ndarray, q: np.ndarray) -> Program:
    prog = Program("lcp")
    z = prog.add_variables("z", q.size, lb=0.0)
    qp = prog.add_parameters("q", q.size, q)
    prog.add_complementarity(z.sym, ca.mtimes(ca.DM(M), z.sym) + qp.sym, name="pairs")
    return prog


def test_smoothed_lcp_derivative_matches_differences_of_relaxed_solutions() -> None:
    rng = np.random.default_rng(3)
    n = 6
    A = rng.normal(size=(n, n))
    M, q = A @ A.T / n + 0.5 * np.eye(n), rng.normal(size=n)
    z = solve_lcp(M, q, "lemke", tol=1e-12).x
    prog = _lcp_program(M, q)
    for kappa in (1e-4, 1e-2):
        S = program_sensitivity(prog, z, smoothing=kappa)
        assert not S.flagged and S.smoothing == kappa
        D = S.dx_dp()
        h = 1e-6

        def relaxed(qq: np.ndarray) -> np.ndarray:
            zz, res, _ = smoothed_solution(prog, z, qq, kappa)
            assert res <= 1e-10
            return zz[:n]

        fd = np.column_stack([(relaxed(q + h * e) - relaxed(q - h * e)) / (2 * h) for e in np.eye(n)])
        assert np.max(np.abs(D - fd)) <= 1e-6
        zk = relaxed(q)  # the relaxed solution: z_i w_i = kappa, both positive
        assert np.all(zk > 0) and np.allclose(zk * (M @ zk + q), kappa, rtol=1e-8)
        v = rng.normal(size=n)
        np.testing.assert_allclose(S.vjp(v), D.T @ v, atol=1e-12)
        np.testing.assert_allclose(S.jvp(v), D @ v, atol=1e-12)


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_smoothed_step_jacobian_tends_to_the_exact_one(name: str) -> None:
    """A box_2d sliding on both corners (a non-degenerate step): the smoothed Jacobian's error falls
    linearly with kappa (10x smaller kappa, ~10x smaller error)."""
    s = box_2d(width=0.4, height=0.2, mu=0.5)
    ts = TimeStepping(s, 0.01, name, tol=1e-13)
    q, v, u = np.array([0.0, 0.1, 0.0]), np.array([0.5, -0.1, 0.0]), np.array([1.0, 0.0, 0.0])
    out = ts.step(q, v, u)
    exact = step_jacobian(ts.formulation, s, 0.01, q, v, u, out).state()
    errs = [np.abs(step_jacobian(ts.formulation, s, 0.01, q, v, u, out, smoothing=k).state() - exact).max()
            for k in (1e-6, 1e-7, 1e-8)]
    assert errs[2] <= 1e-4 * max(1.0, np.abs(exact).max())
    assert 5 <= errs[0] / errs[1] <= 20 and 5 <= errs[1] / errs[2] <= 20


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_smoothed_derivative_at_the_friction_limit(name: str) -> None:
    """The point mass at rest pushed with exactly mu m g: the exact derivative does not exist (the
    forward difference slides, dv_x/du_x = h/m = 0.01; the backward one sticks, 0); the smoothed
    one is finite, not flagged, strictly between them, and tends to their mean as kappa -> 0."""
    s = point_mass_2d(m=1.0, mu=0.5)
    ts = TimeStepping(s, 0.01, name, tol=1e-13)
    q, v, u = np.zeros(2), np.zeros(2), np.array([0.5 * 9.81, 0.0])
    out = ts.step(q, v, u)
    e, h = np.array([1e-6, 0.0]), 1e-6
    forward = (ts.step(q, v, u + e).v[0] - out.v[0]) / h
    backward = (out.v[0] - ts.step(q, v, u - e).v[0]) / h
    assert forward == pytest.approx(0.01, rel=1e-6) and abs(backward) <= 1e-9
    assert step_jacobian(ts.formulation, s, 0.01, q, v, u, out).flagged
    for kappa in (1e-4, 1e-6, 1e-8):
        J = step_jacobian(ts.formulation, s, 0.01, q, v, u, out, smoothing=kappa)
        assert not J.flagged and np.isfinite(J.state()).all()
        assert backward < J.dv_du[0, 0] < forward
    assert J.dv_du[0, 0] == pytest.approx(0.005, abs=2e-5)


def test_smoothing_must_be_a_nonnegative_number() -> None:
    prog = _lcp_program(np.eye(2), np.array([1.0, -1.0]))
    with pytest.raises(InputError, match="smoothing"):
        program_sensitivity(prog, np.array([0.0, 1.0]), smoothing=-1.0)
