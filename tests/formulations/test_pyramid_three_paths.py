"""One PyramidLCP instance, three paths: Lemke on the extracted (M, q), IPOPT on the Program, and
the Pyomo model (mpec.simple_nonlinear + the contactmp_ipopt plugin) give the same accelerations."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.formulations.pyramid_lcp import PyramidLCP
from contactmp.models.random_problems import random_problem
from contactmp.models.scenes import box_on_plane
from contactmp.solvers import solve_lcp
from contactmp.solvers.nlp.solve import solve_program


def _instances():
    # a box sliding on a plane (4 sliding corners) and a generated multi-body problem with a
    # P-matrix LCP (unique accelerations), both small enough for a quick Pyomo round trip
    yield "sliding_box", box_on_plane(speed=1.0, mu=0.4)
    yield "generated", random_problem(3, 1, 1, 1, mu=0.3)


@pytest.mark.parametrize("name,model", list(_instances()))
def test_lemke_ipopt_and_pyomo_agree_on_accelerations(name, model):
    import pyomo.environ as pyo

    form = PyramidLCP(model)
    # 1. Lemke on the extracted LCP
    lem = solve_lcp(form.M, form.q, solver="lemke")
    assert lem.success, lem.message
    sol_lemke = form.solution(lem.x)
    assert max(form.check(sol_lemke).values()) < 1e-8

    # 2. IPOPT on the Program
    prog = form.to_program()
    red = prog.to_lcp()
    np.testing.assert_allclose(red.M, form.M, atol=1e-12)
    np.testing.assert_allclose(red.q, form.q, atol=1e-12)
    res = solve_program(prog, strategy="elastic_l1")
    assert res.success, res.message
    sol_ipopt = form.solution(form.z_from_program(prog, res.x))

    # 3. the Pyomo model through pyomo.mpec and the contactmp_ipopt plugin
    m = prog.to_pyomo()
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(m)
    out = pyo.SolverFactory("contactmp_ipopt").solve(m)
    assert str(out.solver.termination_condition) == "optimal", out.solver.message
    x_pyomo = np.concatenate([
        np.array([pyo.value(getattr(m, m.contactmp_names[h.name])[i]) for i in range(h.size)])
        for h in prog.blocks["pyramid_lcp"].variables
    ])
    sol_pyomo = form.solution(x_pyomo)

    for other in (sol_ipopt, sol_pyomo):
        np.testing.assert_allclose(other.qddot, sol_lemke.qddot, atol=1e-6)
        np.testing.assert_allclose(other.lddot, sol_lemke.lddot, atol=1e-6)
