"""solve_program with the Fischer-Burmeister smoothing: phi_eps(a, b) = a + b - sqrt(a^2 + b^2 + 2 eps^2) = 0."""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import OptionError
from contactmp.models.systems import point_mass_2d
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.lcp.ipopt import lcp_program
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.nlp.solve import NLPOptions, fischer_burmeister, solve_program
from contactmp.solvers.registry import lcp_solver
from contactmp.transcriptions.contact_implicit import ContactImplicitTO

#: the Siconos test LCPs shipped in the repository (tests/data/lcp)
DATA = Path(__file__).resolve().parents[2] / "data" / "lcp"
BACKENDS = ["casadi", "cyipopt"]
FB = "fischer_burmeister"
# LCPs with a unique solution (M positive definite or a P-matrix): the Lemke answer is the answer
UNIQUE = ["lcp_deudeu", "lcp_ortiz", "lcp_trivial", "lcp_exp_murty"]


def test_smoothing_function_zero_set() -> None:
    # phi_eps(a, b) = 0  <=>  a, b > 0 and a b = eps^2; at eps = 0, complementarity
    b = np.array([1e-3, 0.1, 1.0, 7.0, 1e3])
    for eps in (1.0, 1e-2, 1e-4):
        assert np.all(np.abs(fischer_burmeister(eps**2 / b, b, eps)) <= 1e-15 * (1 + b))
        assert np.all(fischer_burmeister(2 * eps**2 / b, b, eps) > 0)   # a b > eps^2
        assert np.all(fischer_burmeister(0.5 * eps**2 / b, b, eps) < 0)  # a b < eps^2
        assert np.all(fischer_burmeister(-eps**2 / b, -b, eps) < 0)      # a, b < 0, a b = eps^2
    assert fischer_burmeister(0.0, 3.0) == 0.0 and fischer_burmeister(2.0, 0.0) == 0.0
    assert fischer_burmeister(-1.0, 3.0) < 0 and fischer_burmeister(1.0, 1.0) > 0
    # the CasADi form is the same function
    a_, b_ = ca.SX.sym("a"), ca.SX.sym("b")
    f = ca.Function("phi", [a_, b_], [fischer_burmeister(a_, b_, 0.3)])
    assert float(f(0.2, 1.5)) == pytest.approx(fischer_burmeister(0.2, 1.5, 0.3), abs=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", UNIQUE)
def test_lcp_program_gives_the_lemke_answer(backend: str, name: str) -> None:
    d = np.load(DATA / f"{name}.npz", allow_pickle=False)
    M, q = d["M"], d["q"]
    ref = lcp_solver("lemke")(M, q)
    assert ref.status is Status.SOLVED
    prog, z = lcp_program(M, q)
    r = solve_program(prog, backend, FB)
    assert r.status is Status.SOLVED, r.message
    zs = r.value(z)
    np.testing.assert_allclose(zs, ref.x, atol=1e-6)
    assert lcp_residual(M, q, zs) <= 1e-8
    assert r.residuals["comp_min"] <= 1e-8
    assert r.extras["smoothed_pairs"] == q.size


def test_every_nlp_answer_lies_on_the_smoothed_curve() -> None:
    # each NLP of the homotopy solves a_i b_i = eps^2 exactly (not <=): max_i a_i b_i = eps^2
    d = np.load(DATA / "lcp_ortiz.npz", allow_pickle=False)
    prog, _ = lcp_program(d["M"], d["q"])
    r = solve_program(prog, "casadi", FB, polish=False, homotopy_tol=1e-8)  # every NLP at tol
    hist = r.extras["homotopy"]
    eps = [h["eps"] for h in hist]
    assert eps[0] == 1.0 and all(b == pytest.approx(0.1 * a) for a, b in zip(eps, eps[1:]))
    # every IPOPT iteration is counted: the homotopy's NLPs and the repeat at tol of a loose answer
    assert r.iterations == sum(h["iterations"] + h.get("at_tol", {}).get("iterations", 0) for h in hist)
    for h in hist[:3]:
        assert h["status"] == "Solve_Succeeded"
        assert h["comp_prod"] == pytest.approx(h["eps"] ** 2, rel=1e-6)
        assert h["comp_sign"] == 0.0


def _mpcc(x0: float, y0: float) -> tuple[Program, object, object]:
    """min (x - 1)^2 + (y - 1)^2  s.t.  0 <= x _|_ y >= 0: local minimizers (1, 0), (0, 1), f = 1."""
    prog = Program("mpcc")
    x = prog.add_variables("x", 1, init=x0)
    y = prog.add_variables("y", 1, init=y0)
    prog.add_cost((x.sym - 1.0) ** 2 + (y.sym - 1.0) ** 2)
    prog.add_complementarity(x, y)
    return prog, x, y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("start", [(0.5, 0.2), (2.0, 3.0)])
def test_mpcc_with_two_local_minimizers(backend: str, start: tuple[float, float]) -> None:
    prog, x, y = _mpcc(*start)
    r = solve_program(prog, backend, FB)
    assert r.status is Status.SOLVED, r.message
    xy = np.concatenate([r.value(x), r.value(y)])
    assert min(np.abs(xy - [1.0, 0.0]).max(), np.abs(xy - [0.0, 1.0]).max()) <= 1e-6, xy
    assert r.objective == pytest.approx(1.0, abs=1e-6)
    assert min(xy) >= 0.0 and min(xy) <= 1e-8  # on the smoothed curve: x y = eps^2 > 0


def test_sign_indefinite_pairs_keep_the_product_form() -> None:
    # NOSBENCH's convention (sign_constraints=False): Lambda * L = 0 with L free is stored as the
    # pairs (Lambda, L) and (Lambda, -L); phi_eps = 0 would force L > 0 and -L > 0 at once. Only
    # (s, t + 1), nonnegative on the box, is smoothed. Local minimizers: Lambda = 2, L = 0 (f = 2)
    # and Lambda = 0, L = 1 (f = 5); s = 0 in both.
    prog = Program("signs")
    lam = prog.add_variables("Lambda", 1, lb=0.0, init=1.0)
    L = prog.add_variables("L", 1, init=0.5)
    s = prog.add_variables("s", 1, lb=0.0, init=0.5)
    t = prog.add_variables("t", 1, lb=0.0, init=0.5)
    prog.add_complementarity(ca.vertcat(lam.sym, lam.sym, s.sym), ca.vertcat(L.sym, -L.sym, t.sym + 1.0))
    prog.add_cost((L.sym - 1) ** 2 + (lam.sym - 2) ** 2 + (s.sym - 1) ** 2 + (t.sym - 1) ** 2)
    r = solve_program(prog, "casadi", FB, sign_constraints=False, comp_tol=1e-7)
    assert r.extras["smoothed_pairs"] == 1
    assert r.status is Status.SOLVED, r.message
    lv, Lv, sv, tv = (float(r.value(h)[0]) for h in (lam, L, s, t))
    assert abs(lv * Lv) <= 1e-7 and 0.0 <= sv <= 1e-7
    assert tv == pytest.approx(1.0, abs=1e-6)
    assert r.objective == pytest.approx(2.0, abs=1e-6) or r.objective == pytest.approx(5.0, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_infeasible_smoothed_nlp_does_not_end_the_homotopy(backend: str) -> None:
    # with x + y <= 1.5, x y = eps^2 = 1 has no solution (x + y >= 2 sqrt(x y) = 2), x y = 0.01
    # has: the smoothed sets are not nested, so the first NLP's infeasibility must not stop the
    # homotopy. min (x - 1)^2 + (y - 2)^2: local minimizers (0, 1.5) (f = 1.25) and (1, 0) (f = 4).
    prog = Program("not_nested")
    x = prog.add_variables("x", 1, lb=0.0, init=0.4)
    y = prog.add_variables("y", 1, lb=0.0, init=0.6)
    prog.add_constraint(x.sym + y.sym, -np.inf, 1.5)
    prog.add_complementarity(x, y)
    prog.add_cost((x.sym - 1.0) ** 2 + (y.sym - 2.0) ** 2)
    r = solve_program(prog, backend, FB)
    hist = r.extras["homotopy"]
    assert hist[0]["eps"] == 1.0 and hist[0]["status"] not in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
    assert r.status is Status.SOLVED, r.message
    xy = np.concatenate([r.value(x), r.value(y)])
    if xy[0] < xy[1]:
        np.testing.assert_allclose(xy, [0.0, 1.5], atol=1e-6)
        assert r.objective == pytest.approx(1.25, abs=1e-6)
    else:
        np.testing.assert_allclose(xy, [1.0, 0.0], atol=1e-6)
        assert r.objective == pytest.approx(4.0, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_contact_implicit_push_matches_scholtes(backend: str) -> None:
    # the point-mass push of tests/transcriptions/test_contact_implicit.py; Scholtes reaches 25.0762
    sys_ = point_mass_2d(m=1.0, mu=0.5, g=9.81)
    to = ContactImplicitTO(sys_, 20, 0.05, formulation="pyramid", facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    r = to.solve(backend=backend, strategy=FB)
    assert r.status is Status.SOLVED
    assert r.objective == pytest.approx(25.0762, abs=1e-3)
    assert r.comp_violation <= 1e-8 and r.constraint_violation <= 1e-6
    np.testing.assert_allclose(r.q[-1], [0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(r.p_n[:, 0], 1.0 * 9.81 * 0.05, atol=1e-6)  # stays on the ground


@pytest.mark.parametrize(
    ("field", "value"),
    [("eps0", 0.0), ("eps0", -1.0), ("eps0", float("nan")), ("eps0", True), ("eps0", "1"),
     ("eps_min", 0.0), ("eps_min", float("inf")), ("eps_factor", 1.0), ("eps_factor", 0.0),
     ("eps_factor", 2.0), ("eps_factor", float("nan")), ("eps_factor", False)],
)
def test_bad_option_values_name_the_field(field: str, value: object) -> None:
    prog, _, _ = _mpcc(0.5, 0.2)
    with pytest.raises(OptionError, match=field):
        solve_program(prog, "casadi", FB, **{field: value})
    with pytest.raises(OptionError, match=field):
        NLPOptions.build(None, **{field: value})


def test_inconsistent_and_unknown_options() -> None:
    with pytest.raises(OptionError, match="eps_min"):
        NLPOptions.build(None, eps0=1e-3, eps_min=1e-2)
    with pytest.raises(OptionError, match="eps0"):
        NLPOptions.build(None, eps_0=0.1)  # did you mean eps0?
    o = NLPOptions.build(None, eps0=0.5, eps_factor=0.2, eps_min=1e-9)
    assert (o.eps0, o.eps_factor, o.eps_min) == (0.5, 0.2, 1e-9)
