"""Sensitivities of the wrench-polytope steps (formulations/polytope_sensitivity.py): NMDP and the
linearized MDP, one step and 50-step rollouts, against central finite differences.

The references are steps polished by Newton's method on their KKT pieces (``polish_substep``, or the
NMDP option ``polish``): PGM alone stops with answers 1e-9 - 1e-7 m/s off (its stationarity test is
1e-6), which a difference step of 1e-6 would turn into O(1) noise. Polished answers are exact to
rounding (KKT residual ~1e-12 in force units of a 1e6 N/m^2 polytope), so with h = 1e-6 the rounding
error of a difference is ~1e-12 / 1e-6 = 1e-6 in force units, ~1e-9 in the states compared; the
bounds (1e-6 for one step, the issue's 1e-5 over 50 steps) leave more than two orders of room.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import Step
from contactmp.formulations.polytope_sensitivity import polish_substep
from contactmp.formulations.step_sensitivity import step_jacobian
from contactmp.models.systems import hopper_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.rollout_gradient import differentiable_rollout
from contactmp.transcriptions.time_stepping import TimeStepping

H = 1e-6
# k = 1e6 N/m^2 sinks the hopper's 108 N sqrt(108 / 1e6) = 10 mm: its design depth (what the physics
# verdict holds the steps to), declared
PD = {"stiffness": 1e6, "design_depth": 0.0104, "kp": [1e3, 50.0], "kd": [10.0, 1.0]}


def _fd(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    return np.column_stack([(f(x + H * e) - f(x - H * e)) / (2 * H) for e in np.eye(x.size)])


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _polished(ts: TimeStepping, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(q, v)_{k+1}`` with every substep polished (the reference)."""
    out = ts.step(q, v, u)
    assert out.result.status is Status.SOLVED
    for det in out.result.extras["substep_details"]:
        got = polish_substep(ts.formulation, ts.system, np.asarray(det["p"]), det["q"], det["qd"], det["w"])
        assert got is not None
    return np.concatenate(got[:2])


def _stepper(name: str, mu: float = 0.8, h: float = 0.01, **extra: Any) -> TimeStepping:
    opts = {**PD, **extra}
    if name == "nmdp":
        opts.setdefault("adaptive", False)
    return TimeStepping(hopper_2d(mu=mu), h, name, **opts)


CASES = {  # hopper foot 2 mm deep: (v, u) and the mode of the foot
    "sticking": (np.array([0.01, -0.01, 0.0, 0.0, 0.0]), np.array([1.0, 0.5])),
    "sliding": (np.array([0.4, -0.05, 0.02, 0.0, 0.0]), np.array([1.0, 0.5])),
    "lifting": (np.array([0.1, 0.5, 0.0, 0.0, 0.0]), np.array([0.0, 0.0])),
}


@pytest.mark.parametrize("name", ["nmdp", "mdp"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_step_jacobian_matches_finite_differences(name: str, case: str) -> None:
    """d(q, v)+ / d(q, v, u) and d(q, v)+ / dmu of one hopper step under stable PD."""
    ts = _stepper(name)
    s = ts.system
    q = s.q_nominal - np.array([0.0, 0.002, 0.0, 0.0, 0.0])
    v, u = CASES[case]
    out = ts.step(q, v, u)
    J = step_jacobian(ts.formulation, s, ts.h, q, v, u, out, wrt=("mu",))
    assert not J.flagged, J.degenerate
    fd = _fd(lambda x: _polished(ts, x[:5], x[5:10], x[10:]), np.concatenate([q, v, u]))
    assert _rel(np.hstack([J.state(), J.input()]), fd) <= 1e-6
    fd_mu = (_polished(_stepper(name, 0.8 + H), q, v, u) - _polished(_stepper(name, 0.8 - H), q, v, u)) / (2 * H)
    assert _rel(J.param("mu")[:, 0], fd_mu) <= 1e-6
    dh = 1e-9  # the step length 0.01 s, relative 1e-7
    fd_h = (_polished(_stepper(name, h=0.01 + dh), q, v, u) - _polished(_stepper(name, h=0.01 - dh), q, v, u)) / (2 * dh)
    assert _rel(np.concatenate([J.dq_dh, J.dv_dh]), fd_h) <= 1e-6


def test_adaptive_substeps_are_chained() -> None:
    """An NMDP frame of 0.1 s that the adaptive scheme splits into two substeps: its Jacobian is the
    product of theirs and matches differences of whole (polished) frames, also by the frame's length
    (each substep's length is half of it)."""
    ts = _stepper("nmdp", h=0.1, adaptive=True, polish=True)
    s = ts.system
    # the foot 2 cm up, landing at 2 m/s while moving at 1 m/s: PGM cannot take the whole 0.1 s (its
    # proximal weight exceeds beta_max: no step decreases K), each half it solves
    q, v, u = s.q_nominal + np.array([0.0, 0.02, 0.0, 0.0, 0.0]), np.array([1.0, -2.0, 0.0, 0.0, 0.0]), np.zeros(2)
    out = ts.step(q, v, u)
    assert out.result.extras["substeps"] == [0.05, 0.05]
    J = step_jacobian(ts.formulation, s, ts.h, q, v, u, out)
    fd = _fd(lambda x: (lambda o: np.concatenate([o.q, o.v]))(ts.step(x[:5], x[5:], u)), np.concatenate([q, v]))
    assert _rel(J.state(), fd) <= 1e-6
    dh = 1e-8  # both substeps are halves of h

    def frame(hh: float) -> np.ndarray:
        o = _stepper("nmdp", h=hh, adaptive=True, polish=True).step(q, v, u)
        assert o.result.extras["substeps"] == [hh / 2, hh / 2]
        return np.concatenate([o.q, o.v])

    assert _rel(np.concatenate([J.dq_dh, J.dv_dh]), (frame(0.1 + dh) - frame(0.1 - dh)) / (2 * dh)) <= 1e-6


@pytest.mark.parametrize("name", ["nmdp", "mdp"])
def test_friction_limit_is_flagged_and_one_sided(name: str) -> None:
    """A point mass at rest pushed with exactly mu m g (constant pyramid polytope of 100 N): the
    force sits on the vertex n - mu t with zero slip, the pair (w_0, its power) is biactive. Flagged,
    finite; side "a" (w_0 = 0: the vertex held, sliding) gives the forward difference in the push,
    side "b" (the power zero: sticking) the backward one."""
    s = point_mass_2d(m=1.0, mu=0.5)
    extra = {"polish": True, "adaptive": False} if name == "nmdp" else {}
    ts = TimeStepping(s, 0.01, name, stiffness=0.0, relax=100.0, **extra)
    q, v, u = np.zeros(2), np.zeros(2), np.array([0.5 * 9.81, 0.0])
    out = ts.step(q, v, u)
    nxt = lambda uu: ts.step(q, v, uu).v  # noqa: E731
    # v+ is linear in the push on each side of the limit, so the one-sided differences are exact for
    # any step; 1e-4 N keeps the QP answers' own error (~1e-13 m/s, a cold qpOASES start) at 2e-9
    # of the slope (with 1e-6 N it was 2e-5)
    dh = 1e-4
    e = np.array([dh, 0.0])
    forward, backward = (nxt(u + e) - nxt(u)) / dh, (nxt(u) - nxt(u - e)) / dh
    for side, ref in (("a", forward), ("b", backward)):
        J = step_jacobian(ts.formulation, s, ts.h, q, v, u, out, side=side)
        assert J.degenerate == ["step/dissipation[0]"] and np.isfinite(J.state()).all()
        np.testing.assert_allclose(J.dv_du[:, 0], ref, atol=1e-7)
    np.testing.assert_allclose(forward, [0.008, 0.004], rtol=1e-5)  # h/m (1, mu): sliding along the vertex
    np.testing.assert_allclose(backward, [0.0, 0.0], atol=1e-7)     # sticking: the push is absorbed


def test_separated_contact_is_not_flagged() -> None:
    """The hopper's foot 5 cm above the ground (stiffness polytope: s = 0 there, with zero
    derivative): whatever weights the solver left, the step is free flight, not flagged."""
    ts = _stepper("nmdp")
    s = ts.system
    q, v, u = s.q_nominal + np.array([0.0, 0.05, 0.0, 0.0, 0.0]), np.array([0.1, 0.0, 0.0, 0.0, 0.0]), np.array([2.0, 0.1])
    out = ts.step(q, v, u)
    J = step_jacobian(ts.formulation, s, ts.h, q, v, u, out, wrt=("mu",))
    assert not J.flagged
    np.testing.assert_allclose(J.param("mu"), 0.0, atol=1e-15)
    fd = _fd(lambda x: _polished(ts, x[:5], x[5:], u), np.concatenate([q, v]))
    assert _rel(J.state(), fd) <= 1e-6


@pytest.mark.parametrize("name", ["nmdp", "mdp"])
def test_hopper_rollout_gradient_matches_finite_differences(name: str) -> None:
    """50 steps of the hopper standing under stable PD and varying leg force and hip torque (NMDP
    polished): the adjoint gradient of L = x_N + theta_N + zdot_N^2 / 2 in the inputs, along 4
    random directions, and dL/dmu match central differences of whole re-simulations to 1e-5."""
    extra = {"polish": True} if name == "nmdp" else {}
    ts = _stepper(name, **extra)
    s = ts.system
    q0, v0, N = s.q_nominal - np.array([0.0, 0.001, 0.0, 0.0, 0.0]), np.zeros(5), 50
    k = np.arange(N)
    U = np.column_stack([5.0 * np.sin(0.3 * k), 0.2 * np.cos(0.2 * k)])
    R = differentiable_rollout(ts, q0, v0, U, wrt=("mu",))
    assert R.statuses == ["solved"] * N and R.flagged_steps == []
    q_bar, v_bar = np.zeros_like(R.q), np.zeros_like(R.v)
    q_bar[-1, 0] = q_bar[-1, 2] = 1.0
    v_bar[-1, 1] = R.v[-1, 1]
    _, _, g_u = R.vjp(q_bar, v_bar)
    g_mu = R.param_vjp(q_bar, v_bar)["mu"][0]

    def loss(inputs: np.ndarray, sim: TimeStepping = ts) -> float:
        tr = sim.simulate(q0, v0, inputs.reshape(N, 2), n_steps=N)
        return float(tr.q[-1, 0] + tr.q[-1, 2] + 0.5 * tr.v[-1, 1] ** 2)

    for d in np.random.default_rng(1).normal(size=(4, 2 * N)):
        fd = (loss(U.ravel() + H * d) - loss(U.ravel() - H * d)) / (2 * H)
        assert abs(g_u.ravel() @ d - fd) <= 1e-5 * max(1.0, abs(fd))
    fd_mu = (loss(U.ravel(), _stepper(name, 0.8 + H, **extra)) - loss(U.ravel(), _stepper(name, 0.8 - H, **extra))) / (2 * H)
    assert abs(g_mu - fd_mu) <= 1e-5 * max(1.0, abs(fd_mu))


def test_input_errors() -> None:
    ts = _stepper("mdp")
    s = ts.system
    q, v, u = s.q_nominal, np.zeros(5), np.zeros(2)
    out = ts.step(q, v, u)
    with pytest.raises(InputError, match="wrt"):
        step_jacobian(ts.formulation, s, ts.h, q, v, u, out, wrt=("stiffness",))
    with pytest.raises(InputError, match="polish"):
        TimeStepping(s, 0.01, "nmdp", polish="yes")
    with pytest.raises(InputError, match="params"):
        ts.formulation.advance(Step(s, 0.01, q, v, u, params={"mu": 0.5}))
