"""Refinement of a verified MPCC point by Newton's method on its active pieces
(:mod:`contactmp.solvers.nlp.refine`, ``NLPOptions.refine``)."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import OptionError
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.nlp.solve import solve_program
from contactmp.solvers.nlp.refine import refine_on_pieces


def _small_mpcc() -> Program:
    """min (z0 - 2)^2 + (z1 - 2)^2 + z2^2 s.t. z0 + z1 + z2 = 2.5 (a nonlinear row:
    + 0.1 z0^2 on the left), z2 <= 0.5 (active), 0 <= z0 _|_ z1 >= 0."""
    prog = Program("small")
    z = prog.add_variables("z", 3, lb=[-np.inf, -np.inf, -np.inf], ub=[np.inf, np.inf, 0.5])
    prog.add_constraint(z.sym[0] + z.sym[1] + z.sym[2] + 0.1 * z.sym[0] ** 2, 2.5, 2.5, name="sum")
    prog.add_complementarity(z.sym[0], z.sym[1], name="pair")
    prog.add_cost((z.sym[0] - 2) ** 2 + (z.sym[1] - 2) ** 2 + z.sym[2] ** 2)
    return prog


def test_refinement_lands_on_the_active_pieces_at_rounding() -> None:
    """A point off the row by 1e-7, its bound by 3e-8 and its pair by 2e-8 is moved onto its pieces
    (z1 = 0, z2 = 0.5, the row) to rounding (<= 1e-15: the numbers are of order 1 and the row's
    Jacobian well conditioned), by about the residual it removes (the minimum-norm correction),
    in a few Newton steps; an exact point is returned as it is, not accepted (nothing to lower)."""
    prog = _small_mpcc()
    z0 = (-1 + np.sqrt(1 + 0.4 * 2.0)) / 0.2  # z0 + 0.1 z0^2 = 2.0 with z1 = 0, z2 = 0.5
    exact = np.array([z0, 0.0, 0.5])
    assert prog.residuals(exact)["constraint"] <= 1e-15
    off = exact + np.array([1e-7, 2e-8, 3e-8])
    ref = refine_on_pieces(prog, off)
    assert ref.accepted and ref.before >= 3e-8 and ref.after <= 1e-15
    r = prog.residuals(ref.x)
    assert max(r["bound"], r["constraint"], r["comp_min"]) <= 1e-15
    assert ref.step <= 2e-7 and 1 <= ref.iterations <= 4 and ref.equations == 3
    np.testing.assert_allclose(ref.x, exact, atol=2e-7)
    again = refine_on_pieces(prog, exact)
    assert not again.accepted and np.array_equal(again.x, exact)


def test_refine_option_of_solve_program() -> None:
    """``refine=True`` returns the refined point with ``extras["refinement"]``; the point stays
    solved and its objective moves by less than 1e-6 (it moved by the residual removed); the
    option is checked."""
    prog = _small_mpcc()
    res = solve_program(prog, strategy="scholtes", refine=True, polish=False, certify=False)
    assert res.status is Status.SOLVED
    info = res.extras["refinement"]
    r = res.residuals
    assert info["accepted"] and info["before"] > info["after"]  # IPOPT's answer: 1e-13, refined: ~1e-26
    assert max(r["bound"], r["constraint"], r["comp_min"]) == info["after"] <= 1e-15
    plain = solve_program(prog, strategy="scholtes", polish=False, certify=False)
    assert abs(res.objective - plain.objective) <= 1e-6
    with pytest.raises(OptionError, match="refine"):
        solve_program(prog, refine="yes")


def test_a_pair_with_two_small_sides_is_not_fixed_on_both() -> None:
    """Rows ``1e-3 a + c = 1 + 1e-8``, ``c = 1``, ``b + c = 1`` and the pair ``0 <= a _|_ b >= 0``:
    the solution is ``a = 1e-5, b = 0``. From ``a = 3e-10`` (a residual of 1e-8, 1e-5 away: an
    ill-conditioned row, like IPOPT's answer of a Solo12 step) both sides are below ``active_tol``;
    fixing both would make the rows inconsistent, so only the smaller side is fixed and the
    refinement lands on the solution (to 1e-12, the rounding of the 1e-3 row)."""
    prog = Program("two_small_sides")
    v = prog.add_variables("v", 3)
    a, b, c = v.sym[0], v.sym[1], v.sym[2]
    prog.add_constraint(ca.vertcat(1e-3 * a + c, c, b + c), [1 + 1e-8, 1.0, 1.0], [1 + 1e-8, 1.0, 1.0], name="rows")
    prog.add_complementarity(a, b, name="pair")
    ref = refine_on_pieces(prog, np.array([3e-10, 0.0, 1.0]))
    assert ref.accepted and ref.before == pytest.approx(1e-8 - 3e-13, rel=1e-3) and ref.after <= 1e-15
    np.testing.assert_allclose(ref.x, [1e-5, 0.0, 1.0], atol=1e-12)


def test_a_bound_near_zero_is_not_active_for_that_alone() -> None:
    """Rows ``1e-3 b + c = 1 + 1e-8``, ``c = 1``, ``a + c = 1``, the bound ``b >= 0`` and the pair
    ``0 <= a _|_ b >= 0``: the solution is ``a = 0, b = 1e-5``. From ``a = b = 0`` (a residual of
    1e-8, like a sagittal Solo12 step's NLP answer whose friction pair was at (0, 0) and whose
    solution is (0, 5.5e-5)) the pair's first side is fixed; fixing the bound ``b = 0`` too would
    make the rows inconsistent. The bound is left free while no step violates it, and the
    refinement lands on the solution (to 1e-12, the rounding of the 1e-3 row)."""
    prog = Program("bound_near_zero")
    v = prog.add_variables("v", 3, lb=[-np.inf, 0.0, -np.inf])
    a, b, c = v.sym[0], v.sym[1], v.sym[2]
    prog.add_constraint(ca.vertcat(1e-3 * b + c, c, a + c), [1 + 1e-8, 1.0, 1.0], [1 + 1e-8, 1.0, 1.0], name="rows")
    prog.add_complementarity(a, b, name="pair")
    ref = refine_on_pieces(prog, np.array([0.0, 0.0, 1.0]))
    assert ref.accepted and ref.before == pytest.approx(1e-8, rel=1e-3) and ref.after <= 1e-15
    np.testing.assert_allclose(ref.x, [0.0, 1e-5, 1.0], atol=1e-12)
