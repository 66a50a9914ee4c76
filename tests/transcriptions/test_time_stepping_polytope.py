"""TimeStepping with the polytope formulations ("nmdp", "mdp"): physics of resting and pushed bodies."""
import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.systems import box_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.time_stepping import TimeStepping

G0 = 9.81


def _box_poly(depth: float = 1e-3) -> dict:
    # each bottom corner carries m g / 2 at the depth: k = (m g / 2) / depth^2
    return {"stiffness": 0.5 * G0 / depth ** 2, "relax": 0.0}


@pytest.mark.parametrize("formulation, solver", [("nmdp", "pgm"), ("nmdp", "ipopt"), ("mdp", None)])
def test_box_settles_on_its_polytopes_and_carries_its_weight(formulation: str, solver: str | None) -> None:
    """A 1 kg box dropped 1 mm deep onto the ground settles at the depth where s(phi) = k phi^2 carries
    m g / 2 per bottom corner (1 mm), and the step's normal impulses then sum to m g h."""
    ts = TimeStepping(box_2d(m=1.0, width=0.4, height=0.2), 0.02, formulation, solver=solver,
                      polytope=_box_poly())
    tr = ts.simulate([0.0, 0.1, 0.0], [0.0, 0.0, 0.0], n_steps=40)
    assert all(s is Status.SOLVED for s in tr.status)
    depth = 0.1 - tr.q[-1, 1]
    assert depth >= 1e-3 - 1e-9                                      # at least the static depth
    assert depth < (1.2e-3 if formulation == "nmdp" else 5e-3)
    assert abs(tr.q[-1, 2]) < 1e-9 and np.abs(tr.v[-1]).max() < 1e-4
    assert tr.p_n[-1].sum() == pytest.approx(G0 * 0.02, rel=1e-3)   # sum p_n = m g h at rest
    assert tr.p_n[-1, 2:].max() == 0.0                               # top corners carry nothing


def test_nmdp_methods_agree_step_by_step() -> None:
    """PGM and IPOPT solve the same NMDP step (the box pushed sideways while landing)."""
    kw = dict(polytope=_box_poly())
    a = TimeStepping(box_2d(), 0.02, "nmdp", solver="pgm", **kw).simulate([0.0, 0.249, 0.0], [0.5, -0.2, 0.0],
                                                                          u=[2.0, 0.0, 0.0], n_steps=10)
    b = TimeStepping(box_2d(), 0.02, "nmdp", solver="ipopt", **kw).simulate([0.0, 0.249, 0.0], [0.5, -0.2, 0.0],
                                                                            u=[2.0, 0.0, 0.0], n_steps=10)
    np.testing.assert_allclose(a.q, b.q, atol=1e-6)
    np.testing.assert_allclose(a.p_n, b.p_n, atol=1e-5)


def test_mdp_equals_nmdp_for_a_point_mass_with_a_constant_polytope() -> None:
    """Linear dynamics and a pose-independent polytope: backward Euler and the frozen QP coincide;
    a push below mu m g sticks (x stays put)."""
    poly = {"stiffness": 0.0, "relax": 30.0}
    u = [0.3 * 0.5 * G0, 0.0]
    a = TimeStepping(point_mass_2d(), 0.01, "nmdp", polytope=poly).simulate([0.0, 0.0], [0.0, 0.0], u=u, n_steps=20)
    b = TimeStepping(point_mass_2d(), 0.01, "mdp", polytope=poly).simulate([0.0, 0.0], [0.0, 0.0], u=u, n_steps=20)
    np.testing.assert_allclose(a.q, b.q, atol=1e-7)
    assert np.abs(a.q[:, 0]).max() < 1e-8                             # stiction
    assert a.p_t[-1, 0] == pytest.approx(-u[0] * 0.01, rel=1e-5)      # friction balances the push


def test_polytope_options_are_checked() -> None:
    with pytest.raises(InputError, match="polytope"):
        TimeStepping(box_2d(), 0.01, "nmdp", polytope={"stifness": 1.0})
    with pytest.raises(InputError, match="polytope"):
        TimeStepping(box_2d(), 0.01, "pyramid", polytope=_box_poly())
    with pytest.raises(OptionError):
        TimeStepping(box_2d(), 0.01, "nmdp", solver="mdp", polytope=_box_poly())
