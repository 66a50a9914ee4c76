"""Step Jacobians (formulations/step_sensitivity.py) and rollout gradients
(transcriptions/rollout_gradient.py) against central finite differences of re-simulated steps and
trajectories.

Finite differences use h = 1e-6 on data of order 1-100 with steps solved to 1e-13; on a smooth
piece the truncation error is O(h^2) ~ 1e-12 and the rounding error eps |x| / h ~ 1e-10 per step,
which 50 steps amplify at most by the trajectory's sensitivity (|dx_N / dx_0| < 10 here); the
bounds below (1e-7 for one step, the issue's 1e-5 for 50 steps) leave two orders of room.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.step_sensitivity import step_jacobian
from contactmp.models.systems import box_2d, hopper_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.rollout_gradient import differentiable_rollout
from contactmp.transcriptions.time_stepping import TimeStepping

H = 1e-6


def _fd(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    return np.column_stack([(f(x + H * e) - f(x - H * e)) / (2 * H) for e in np.eye(x.size)])


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("name, options", [
    ("pyramid", {}), ("cone", {}), ("pyramid", {"gap": "position"}), ("cone", {"gap": "position"}),
    ("compliant", {"stiffness": 1e4, "damping": 50.0, "tangential_damping": 20.0}),
])
def test_step_jacobian_matches_finite_differences(name: str, options: dict) -> None:
    """A box_2d sliding on both corners under a push: d(q, v)+ / d(q, v, u) of one step."""
    s = box_2d(width=0.4, height=0.2, mu=0.5)
    ts = TimeStepping(s, 0.01, name, tol=1e-13, **options)
    q, v, u = np.array([0.0, 0.1, 0.0]), np.array([0.5, -0.1, 0.0]), np.array([1.0, 0.0, 0.0])
    out = ts.step(q, v, u)
    assert out.result.status is Status.SOLVED
    J = step_jacobian(ts.formulation, s, 0.01, q, v, u, out)

    def nxt(x: np.ndarray) -> np.ndarray:
        o = ts.step(x[:3], x[3:6], x[6:])
        return np.concatenate([o.q, o.v])

    fd = _fd(nxt, np.concatenate([q, v, u]))
    assert _rel(np.hstack([J.state(), J.input()]), fd) <= 1e-7


@pytest.mark.parametrize("name, options", [
    ("pyramid", {}), ("cone", {}), ("cone", {"gap": "position"}),
    ("compliant", {"stiffness": 1e4, "damping": 50.0, "tangential_damping": 20.0}),
])
def test_step_jacobian_by_the_step_length(name: str, options: dict) -> None:
    """d(q, v)+ / dh (h a parameter of the step's Program) against central differences of steps of
    TimeSteppings with h +/- 1e-9 (relative 1e-7 of h = 0.01)."""
    s = box_2d(width=0.4, height=0.2, mu=0.5)
    q, v, u = np.array([0.0, 0.1, 0.0]), np.array([0.5, -0.1, 0.0]), np.array([1.0, 0.0, 0.0])

    def nxt(h: float) -> np.ndarray:
        o = TimeStepping(s, h, name, tol=1e-13, **options).step(q, v, u)
        return np.concatenate([o.q, o.v])

    ts = TimeStepping(s, 0.01, name, tol=1e-13, **options)
    J = step_jacobian(ts.formulation, s, 0.01, q, v, u, ts.step(q, v, u))
    dh = 1e-9
    fd = (nxt(0.01 + dh) - nxt(0.01 - dh)) / (2 * dh)
    assert _rel(np.concatenate([J.dq_dh, J.dv_dh]), fd) <= 1e-6


def test_free_flight_step_jacobian_is_closed_form() -> None:
    """A point mass 1 m above the ground: v+ = v + h (u/m - g e_z), q+ = q + h v+, so
    dq+/dq = I, dq+/dv = h I, dv+/dv = I, dv+/du = h/m I (B = I), dq+/du = h^2/m I."""
    s = point_mass_2d(m=2.0)
    ts = TimeStepping(s, 0.05, "cone")
    q, v, u = np.array([0.0, 1.0]), np.array([0.3, 0.0]), np.array([0.5, 0.0])
    J = step_jacobian(ts.formulation, s, 0.05, q, v, u, ts.step(q, v, u))
    np.testing.assert_allclose(J.dq_dq, np.eye(2), atol=1e-14)
    np.testing.assert_allclose(J.dq_dv, 0.05 * np.eye(2), atol=1e-14)
    np.testing.assert_allclose(J.dv_du, 0.025 * np.eye(2), atol=1e-14)
    np.testing.assert_allclose(J.dq_du, 0.00125 * np.eye(2), atol=1e-14)
    # dv+/dh = u/m - g e_z; dq+/dh = v+ + h dv+/dh
    np.testing.assert_allclose(J.dv_dh, [0.25, -9.81], atol=1e-12)
    np.testing.assert_allclose(J.dq_dh, ts.step(q, v, u).v + 0.05 * np.array([0.25, -9.81]), atol=1e-12)
    assert not J.flagged


def test_separated_contact_pairs_are_benign() -> None:
    """A point mass 5 cm above the ground (inside TimeStepping's active gap, so its contact is in the
    pyramid step) moving sideways: the contact carries nothing, two friction pairs have both sides
    zero and the slip multiplier is free (F_x singular), but v_{k+1} is unique and both pieces of
    each pair give the same d v_{k+1}: the pairs are benign, the step is not flagged, and its
    Jacobian is free flight's."""
    from contactmp.formulations.step_sensitivity import _step_program, program_sensitivity

    s = point_mass_2d(m=2.0)
    ts = TimeStepping(s, 0.05, "pyramid", tol=1e-13)
    q, v, u = np.array([0.0, 0.05]), np.array([0.3, 0.0]), np.array([0.5, 0.0])
    out = ts.step(q, v, u)
    assert out.active.all()
    J = step_jacobian(ts.formulation, s, 0.05, q, v, u, out)
    assert not J.flagged
    np.testing.assert_allclose(J.dv_dv, np.eye(2), atol=1e-14)
    np.testing.assert_allclose(J.dv_du, 0.025 * np.eye(2), atol=1e-14)
    prog, params, *_ = _step_program(ts.formulation, s, np.flatnonzero(out.active), {})
    for P, val in zip(params, (q, v, u, 0.05)):  # the state, then h
        P.value = val
    S = program_sensitivity(prog, out.result.x)  # judged on all of x: the free slip multiplier is flagged
    assert S.flagged
    S = program_sensitivity(prog, out.result.x, outputs=slice(0, 2))  # judged on v_{k+1}
    assert S.benign and not S.flagged


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_box_rollout_gradient_matches_finite_differences(name: str) -> None:
    """50 steps of a box_2d pushed along the ground (sliding throughout, no mode switch):
    the gradient of L = x_N + vx_N^2 / 2 with respect to the pushes (along 6 random directions)
    and v_0, by the adjoint, matches central differences of whole re-simulations to 1e-5 relative; the forward product
    agrees with the adjoint (<J du, g> = <du, J^T g>)."""
    s = box_2d(width=0.4, height=0.2, mu=0.5)
    ts = TimeStepping(s, 0.01, name, tol=1e-13)
    q0, v0, N = np.array([0.0, 0.1, 0.0]), np.array([1.0, 0.0, 0.0]), 50
    U = np.zeros((N, 3))
    U[:, 0] = 2.0 + 0.3 * np.sin(np.arange(N))
    R = differentiable_rollout(ts, q0, v0, U)
    assert R.statuses == ["solved"] * N
    q_bar, v_bar = np.zeros_like(R.q), np.zeros_like(R.v)
    q_bar[-1, 0], v_bar[-1, 0] = 1.0, R.v[-1, 0]
    g_q0, g_v0, g_u = R.vjp(q_bar, v_bar)

    def loss(v_start: np.ndarray, push: np.ndarray) -> float:
        Uk = U.copy()
        Uk[:, 0] = push
        tr = ts.simulate(q0, v_start, Uk, n_steps=N)
        return float(tr.q[-1, 0] + 0.5 * tr.v[-1, 0] ** 2)

    for d in np.random.default_rng(2).normal(size=(6, N)):
        fd = (loss(v0, U[:, 0] + H * d) - loss(v0, U[:, 0] - H * d)) / (2 * H)
        assert abs(g_u[:, 0] @ d - fd) <= 1e-5 * max(1.0, abs(fd))
    fd_v = _fd(lambda vv: np.array([loss(vv, U[:, 0])]), v0.copy()).ravel()
    assert _rel(g_v0, fd_v) <= 1e-5
    du = np.random.default_rng(0).normal(size=U.shape)
    dq, dv = R.jvp(du=du)
    assert abs((dq[-1, 0] + R.v[-1, 0] * dv[-1, 0]) - np.sum(g_u * du)) <= 1e-10 * max(1.0, np.abs(g_u).sum())


def test_hopper_rollout_gradient_matches_finite_differences() -> None:
    """50 steps of the hopper standing on its foot (sticking throughout) under a varying leg force
    and hip torque: the gradient of L = z_N + theta_N + zdot_N^2 / 2 with respect to the inputs,
    along 6 random directions, and with respect to v_0 matches central differences to 1e-5
    relative (cone)."""
    s = hopper_2d()
    ts = TimeStepping(s, 0.01, "cone", tol=1e-13)
    q0, v0, N = np.array(s.q_nominal, dtype=float), np.zeros(5), 50
    k = np.arange(N)
    U = np.column_stack([98.1 + 5.0 * np.sin(0.3 * k), 0.2 * np.cos(0.2 * k)])
    R = differentiable_rollout(ts, q0, v0, U)
    assert R.statuses == ["solved"] * N and R.flagged_steps == []
    q_bar, v_bar = np.zeros_like(R.q), np.zeros_like(R.v)
    q_bar[-1, 1] = q_bar[-1, 2] = 1.0
    v_bar[-1, 1] = R.v[-1, 1]
    _, g_v0, g_u = R.vjp(q_bar, v_bar)

    def loss(v_start: np.ndarray, inputs: np.ndarray) -> float:
        tr = ts.simulate(q0, v_start, inputs.reshape(N, 2), n_steps=N)
        return float(tr.q[-1, 1] + tr.q[-1, 2] + 0.5 * tr.v[-1, 1] ** 2)

    for d in np.random.default_rng(1).normal(size=(6, 2 * N)):
        fd = (loss(v0, U.ravel() + H * d) - loss(v0, U.ravel() - H * d)) / (2 * H)
        assert abs(g_u.ravel() @ d - fd) <= 1e-5 * max(1.0, abs(fd))
    fd_v = _fd(lambda x: np.array([loss(x, U.ravel())]), v0.copy()).ravel()
    assert _rel(g_v0, fd_v) <= 1e-5


def test_relaxed_rollout_is_smooth_and_its_gradient_exact() -> None:
    """``relaxed=True``: the hopper's trajectory is that of the relaxed model (every pair a b =
    kappa), through a push-off (300 N for 0.15 s), 0.3 s of flight with the leg pulled in, and the
    landing; its adjoint gradient matches
    central differences of the relaxed rollout itself to 1e-6 relative (a smooth map: Newton solves
    each relaxed step to 1e-12 relative, so rounding / h ~ 1e-6 bounds the difference), and as
    kappa falls the relaxed trajectory tends to the exact one."""
    N, h = 12, 0.05
    ts = TimeStepping(hopper_2d(), h, "pyramid", tol=1e-12, active_gap=np.inf)
    q0 = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    U = np.tile([107.9, 2.0], (N, 1))
    U[2:5, 0], U[5:8, 0] = 300.0, -60.0
    U += np.random.default_rng(0).normal(size=(N, 2)) * [5.0, 1.0]
    exact = ts.simulate(q0, np.zeros(5), U, n_steps=N).q
    phi = np.array([ts.system.eval_phi(q)[0] for q in exact])
    assert phi[:6].max() < 1e-4 and phi[7:11].min() > 0.4 and phi[-1] < 0.01  # stance, flight, landing
    gaps = []
    for kappa in (1e-2, 1e-4, 1e-6):
        R = differentiable_rollout(ts, q0, np.zeros(5), U, smoothing=kappa, relaxed=True)
        assert R.flagged_steps == []
        gaps.append(float(np.abs(R.q - exact).max()))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3
    kappa = 1e-2
    R = differentiable_rollout(ts, q0, np.zeros(5), U, smoothing=kappa, relaxed=True)
    w = np.random.default_rng(1).normal(size=R.q.shape)
    g_u = R.vjp(w)[2]

    def loss(inputs: np.ndarray) -> float:
        return float(np.sum(w * differentiable_rollout(ts, q0, np.zeros(5), inputs, smoothing=kappa, relaxed=True).q))

    for d in np.random.default_rng(2).normal(size=(2, N, 2)):
        fd = (loss(U + H * d) - loss(U - H * d)) / (2 * H)
        assert abs(np.sum(g_u * d) - fd) <= 1e-6 * max(1.0, abs(fd))
    with pytest.raises(InputError, match="relaxed"):
        differentiable_rollout(ts, q0, np.zeros(5), U, relaxed=True)


def test_rollout_input_errors() -> None:
    s = box_2d()
    ts = TimeStepping(s, 0.01, "cone")
    with pytest.raises(InputError, match="u"):
        differentiable_rollout(ts, [0.0, 0.25, 0.0], np.zeros(3), np.zeros((4, 2)))
    R = differentiable_rollout(ts, [0.0, 0.25, 0.0], np.zeros(3), np.zeros((2, 3)))
    with pytest.raises(InputError, match="q_bar"):
        R.vjp(q_bar=np.zeros((2, 3)))


GAINS = {"stiffness": 1e4, "damping": 50.0, "tangential_damping": 20.0}


@pytest.mark.parametrize("name, options, wrt", [
    ("cone", {}, ("mu",)), ("pyramid", {}, ("mu",)),
    ("compliant", GAINS, ("mu", "stiffness", "damping", "tangential_damping")),
])
def test_step_jacobian_by_model_parameters(name: str, options: dict, wrt: tuple) -> None:
    """d(q, v)+ / d theta for mu and the compliant gains (one column per contact; the four corners
    share the value, so the columns' sum is the derivative by the shared value) against central
    differences of steps of re-built systems and formulations (step 1e-6 times the value)."""
    q, v, u = np.array([0.0, 0.1, 0.0]), np.array([0.5, -0.1, 0.0]), np.array([1.0, 0.0, 0.0])

    def run(mu: float = 0.5, **gains: float) -> tuple:
        s = box_2d(width=0.4, height=0.2, mu=mu)
        ts = TimeStepping(s, 0.01, name, tol=1e-13, **{**options, **gains})
        out = ts.step(q, v, u)
        return s, ts, out, np.concatenate([out.q, out.v])

    s, ts, out, _ = run()
    J = step_jacobian(ts.formulation, s, 0.01, q, v, u, out, wrt=wrt)
    for p in wrt:
        base = 0.5 if p == "mu" else GAINS[p]
        hh = H * base
        fd = (run(**{p: base + hh})[3] - run(**{p: base - hh})[3]) / (2 * hh)
        assert np.max(np.abs(J.param(p).sum(axis=1) - fd)) <= 1e-6 * max(1e-3, np.max(np.abs(fd)))
    with pytest.raises(InputError, match="wrt"):
        step_jacobian(ts.formulation, s, 0.01, q, v, u, out, wrt=("friction",))


def test_rollout_gradient_by_friction_coefficient() -> None:
    """50 steps of the pushed box (cone): dL/dmu of L = x_N by the adjoint (summed over the four
    corner contacts) equals the central difference of re-simulations with mu +/- 1e-6."""
    q0, v0, N = np.array([0.0, 0.1, 0.0]), np.array([1.0, 0.0, 0.0]), 50
    U = np.zeros((N, 3))
    U[:, 0] = 2.0

    def sim(mu: float) -> TimeStepping:
        return TimeStepping(box_2d(width=0.4, height=0.2, mu=mu), 0.01, "cone", tol=1e-13)

    R = differentiable_rollout(sim(0.5), q0, v0, U, wrt=("mu",))
    q_bar = np.zeros_like(R.q)
    q_bar[-1, 0] = 1.0
    g = R.param_vjp(q_bar)["mu"].sum()
    fd = (sim(0.5 + H).simulate(q0, v0, U, n_steps=N).q[-1, 0] - sim(0.5 - H).simulate(q0, v0, U, n_steps=N).q[-1, 0]) / (2 * H)
    assert abs(g - fd) <= 1e-5 * max(1.0, abs(fd))
    dq, _ = R.jvp(dparams={"mu": np.ones(4)})  # box_2d: 4 corner contacts, one mu
    assert abs(dq[-1, 0] - g) <= 1e-10 * max(1.0, abs(g))


def test_identification_recovers_friction_and_stiffness() -> None:
    """A box thrown tilted onto the ground (compliant contact: mu = 0.4, K = 2000 N/m), observed
    without noise for 30 steps of 10 ms: Gauss-Newton (scipy's least_squares) on (mu, log K) with
    the rollout's forward products as the residual Jacobian recovers both to 1e-6 relative from
    (0.8, 500)."""
    from scipy.optimize import least_squares

    N, gains = 30, {"damping": 20.0, "tangential_damping": 50.0}
    q0, v0, U = np.array([0.0, 0.12, 0.1]), np.array([1.5, -0.5, 0.0]), np.zeros((N, 3))

    def sim(mu: float, K: float) -> TimeStepping:
        return TimeStepping(box_2d(width=0.4, height=0.2, mu=mu), 0.01, "compliant", tol=1e-12, stiffness=K, **gains)

    observed = sim(0.4, 2000.0).simulate(q0, v0, U, n_steps=N).q
    memo = {}

    def residual(theta: np.ndarray) -> np.ndarray:
        memo["R"] = differentiable_rollout(sim(theta[0], float(np.exp(theta[1]))), q0, v0, U, wrt=("mu", "stiffness"))
        return (memo["R"].q - observed).ravel()

    def jacobian(theta: np.ndarray) -> np.ndarray:
        dq_mu, _ = memo["R"].jvp(dparams={"mu": np.ones(4)})
        dq_K, _ = memo["R"].jvp(dparams={"stiffness": np.ones(4)})
        return np.column_stack([dq_mu.ravel(), dq_K.ravel() * np.exp(theta[1])])

    res = least_squares(residual, x0=[0.8, np.log(500.0)], jac=jacobian, method="trf", xtol=1e-12, ftol=1e-12,
                        bounds=([0.01, np.log(50.0)], [2.0, np.log(1e5)]))
    assert abs(res.x[0] - 0.4) <= 4e-7 and abs(np.exp(res.x[1]) - 2000.0) <= 2e-3


def test_trajectory_optimization_sensitivity_to_the_goal() -> None:
    """The box push (pyramid, quick, Scholtes): the KKT sensitivity of the optimal pushes to the goal
    x_N = 1 matches central differences of re-solved tasks with x_N = 1 +/- 1e-4 (to 1e-3 relative:
    the re-solves are accurate to about IPOPT's 1e-8, so the difference quotient to ~1e-4), and
    dJ/dx_N = -lambda of the goal row to 1e-5 relative."""
    from contactmp.case_studies import _cito

    opts = dict(_cito.TASKS["box"].options)

    def solve(goal: float) -> object:
        to = _cito.TASKS["box"].build("pyramid", True)
        row = to.program["final_q"]
        lb = row.lb.copy()
        lb[0] = goal
        row.lb, row.ub = lb, lb.copy()
        traj = to.solve(strategy="scholtes", **opts)
        assert traj.status is Status.SOLVED
        return to, traj

    to, traj = solve(1.0)
    S = to.sensitivity(traj)
    assert S.stationarity <= 1e-6
    row = to.program["final_q"].index.start
    dx = S.dx_drows([row])[:, 0]
    du = np.array([to.program.value(h, dx) for h in to.u])[:, 0]
    (_, plus), (_, minus) = solve(1.0 + 1e-4), solve(1.0 - 1e-4)
    fd = (plus.u[:, 0] - minus.u[:, 0]) / 2e-4
    assert np.max(np.abs(du - fd)) <= 1e-3 * np.max(np.abs(fd))
    dJ = (plus.objective - minus.objective) / 2e-4
    assert abs(-S.multipliers[S.active.index(f"row g[{row}]")] - dJ) <= 1e-5 * abs(dJ)


def test_trajectory_optimization_sensitivity_to_mu() -> None:
    """The box push built with mu as a Program parameter (``model_parameters=("mu",)``; the stage
    group keeps it as every knot's shared parameter): the same optimum (36.11401) as with mu a
    number, and d(pushes)/dmu from the KKT system matches central differences of re-solves with
    the parameter at 0.5 +/- 1e-4 (to 1e-3 relative: the re-solves' accuracy)."""
    from contactmp.models.systems import box_2d as box
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    def build(mu: float) -> ContactImplicitTO:
        to = ContactImplicitTO(box(m=1.0, width=0.4, height=0.2, mu=0.5), 20, 0.05, "pyramid", model_parameters=("mu",))
        to.program["param/mu"].value = np.full(4, mu)
        to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.set_final_state([1.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
        to.minimize_effort(1.0)
        return to

    def solve(mu: float) -> tuple:
        to = build(mu)
        traj = to.solve(strategy="scholtes", ipopt={"mu_strategy": "monotone"})
        assert traj.status is Status.SOLVED
        return to, traj

    to, traj = solve(0.5)
    assert abs(traj.objective - 36.11401) <= 1e-4
    dx = to.sensitivity(traj).dx_dp().sum(axis=1)  # the 4 contacts' mu move together
    du = np.array([to.program.value(h, dx) for h in to.u])[:, 0]
    (_, plus), (_, minus) = solve(0.5 + 1e-4), solve(0.5 - 1e-4)
    fd = (plus.u[:, 0] - minus.u[:, 0]) / 2e-4
    assert np.max(np.abs(du - fd)) <= 1e-3 * np.max(np.abs(fd))


def test_model_parameter_changes_without_rebuild_in_both_derivative_paths() -> None:
    """mu held as a Program parameter and set to 0.4 after the build: IPOPT with the whole-program
    derivatives and with the stage-structured ones (the knots' shared parameter mapped) reach the
    same optimum, cheaper than at mu = 0.5 (27.4279 < 36.1140: less friction to push against)."""
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    costs = []
    for derivatives in ("full", "stages"):
        to = ContactImplicitTO(box_2d(m=1.0, width=0.4, height=0.2, mu=0.5), 20, 0.05, "pyramid",
                               model_parameters=("mu",))
        to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.set_final_state([1.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
        to.minimize_effort(1.0)
        to.program["param/mu"].value = np.full(4, 0.4)
        traj = to.solve(strategy="scholtes", derivatives=derivatives, ipopt={"mu_strategy": "monotone"})
        assert traj.status is Status.SOLVED
        costs.append(traj.objective)
    assert abs(costs[0] - costs[1]) <= 1e-6 * costs[0] and abs(costs[0] - 27.42785) <= 1e-4


def test_model_parameters_a_formulation_does_not_read_are_refused() -> None:
    """A model parameter the formulation does not read from Step.params is an InputError naming the
    field (not a parameter that silently does nothing); the polytope formulations read mu (their
    KKT blocks take it as an SX), and a TO built with it holds it as a parameter of every knot."""
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    with pytest.raises(InputError, match="model_parameters.*'mdp' does not read"):
        ContactImplicitTO(point_mass_2d(), 5, 0.05, "mdp", stiffness=1e4, model_parameters=("stiffness",))
    to = ContactImplicitTO(point_mass_2d(), 5, 0.05, "mdp", stiffness=1e4, model_parameters=("mu",))
    assert to.model_parameters["mu"].tolist() == [0.5]
    with pytest.raises(InputError, match="model_parameters.*'cone' does not read.*stiffness"):
        ContactImplicitTO(point_mass_2d(), 5, 0.05, "cone", model_parameters=("stiffness",))


def test_associated_cone_grazing_is_flagged() -> None:
    """A compliant (associated) cone contact with r = 0 and u_n = mu |u_T| > 0: the normal pair's
    sides p_n and u_n - mu gamma are both zero, a grazing point, flagged as the Coulomb one is."""
    from contactmp.formulations.step_sensitivity import program_sensitivity
    from contactmp.program import Program

    for associated, u_n in ((True, 0.5), (False, 0.0)):
        prog = Program("cone")
        r = prog.add_variables("r", 3, lb=[0.0, -np.inf, -np.inf])
        uv = prog.add_parameters("u", 3, [u_n, 1.0, 0.0])
        c = prog.add_cone_complementarity((r.sym[0:1], r.sym[1:2], r.sym[2:3]),
                                          (uv.sym[0:1], uv.sym[1:2], uv.sym[2:3]), [0.5], associated=associated)
        x = np.zeros(prog.n_x)
        x[c.w.index] = [-1.0, 0.0]
        x[c.gamma.index] = 1.0
        S = program_sensitivity(prog, x)
        assert S.flagged and any("grazing" in d for d in S.degenerate), (associated, S.degenerate)


@pytest.mark.parametrize("target, lb, ub, expect", [
    (2.0, -np.inf, 1.0, "ok"),         # min (x - 2)^2, x <= 1: x = 1, lambda = 2 >= 0 (upper bound)
    (0.0, 0.0, np.inf, "weak"),         # min x^2, x >= 0: x = 0, lambda = 0 (weakly active)
    (1.0, 0.0, np.inf, "wrong"),        # x = 0 is no minimizer of (x - 1)^2 on x >= 0: lambda = 2 > 0
])
def test_kkt_multiplier_signs(target: float, lb: float, ub: float, expect: str) -> None:
    """The KKT sensitivity checks the signs of the active inequalities' multipliers (L = f + lambda c):
    an upper bound needs lambda >= 0, a lower one lambda <= 0; a zero multiplier is weakly active."""
    from contactmp.program import Program
    from contactmp.solvers.nlp.kkt import kkt_sensitivity

    prog = Program("one")
    x = prog.add_variables("x", 1, lb=lb, ub=ub)
    prog.add_cost((x.sym[0] - target) ** 2)
    xs = min(max(target, 0.0 if np.isfinite(lb) else -np.inf), ub) if expect != "wrong" else 0.0
    S = kkt_sensitivity(prog, np.array([xs]))
    assert S.active == ["bound x[0]"] and not S.singular
    assert (S.wrong_sign, S.weakly_active, S.flagged) == {
        "ok": ([], [], False), "weak": ([], ["bound x[0]"], True), "wrong": (["bound x[0]"], [], True)}[expect]
