"""The planar pusher (models/manipulation.py): its gaps and Jacobian rows against finite differences
of the geometry, the finger-box frame is the face's, and malformed input is refused."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.manipulation import face_contact_2d, finger_in_box_frame, planar_pusher

W, HH = 0.2, 0.2
EPS = 1e-6


def _rot(th: float) -> np.ndarray:
    return np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])


def _configs(n: int = 6) -> list[np.ndarray]:
    rng = np.random.default_rng(15)
    out = []
    for _ in range(n):
        x, th = rng.uniform(-0.5, 0.5), rng.uniform(-0.6, 0.6)
        z = HH / 2 + rng.uniform(-0.05, 0.1)
        # the finger somewhere left of the face, at a height within it
        r = np.array([-W / 2 - rng.uniform(0.0, 0.2), rng.uniform(-HH / 2, HH / 2)])
        pf = np.array([x, z]) + _rot(th) @ r
        out.append(np.array([x, z, th, *pf]))
    return out


def _points(q: np.ndarray, r_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The finger and the box's material point with body coordinates ``r_b``."""
    return q[3:5], q[:2] + _rot(q[2]) @ r_b


def test_gaps_and_normal_rows_match_finite_differences() -> None:
    s = planar_pusher()
    for q in _configs():
        phi = s.eval_phi(q)
        Jn, Jt, Jo = s.eval_J(q)
        fd = np.column_stack([(s.eval_phi(q + EPS * e) - s.eval_phi(q - EPS * e)) / (2 * EPS) for e in np.eye(5)])
        np.testing.assert_allclose(Jn, fd, atol=1e-8)
        np.testing.assert_array_equal(Jo, 0.0)
        # ground corners: the corner heights
        R = _rot(q[2])
        corners = [q[:2] + R @ np.array([-W / 2, -HH / 2]), q[:2] + R @ np.array([W / 2, -HH / 2])]
        np.testing.assert_allclose(phi[:2], [c[1] for c in corners], atol=1e-12)
        # finger: distance to the left face's plane, -r_x - width/2 in the box's frame
        r = finger_in_box_frame(q)
        np.testing.assert_allclose(phi[2], -r[0] - W / 2, atol=1e-12)


def test_tangential_rows_are_relative_sliding_velocities() -> None:
    """``Jt v`` is the finite-difference velocity of the contact point along t: the corner's x
    velocity on the ground, and for the finger its velocity relative to the box's material point
    under it, along ``t = R(theta) e_z`` (and ``Jn v`` along ``n = R(theta) (-e_x)``)."""
    s = planar_pusher()
    rng = np.random.default_rng(7)
    for q in _configs():
        v = rng.standard_normal(5)
        Jn, Jt, _ = s.eval_J(q)
        R = _rot(q[2])
        for j, rb in enumerate((np.array([-W / 2, -HH / 2]), np.array([W / 2, -HH / 2]))):
            _, p_plus = _points(q + EPS * v, rb)
            _, p_minus = _points(q - EPS * v, rb)
            vel = (p_plus - p_minus) / (2 * EPS)
            np.testing.assert_allclose(Jt[j] @ v, vel[0], atol=1e-7)
            np.testing.assert_allclose(Jn[j] @ v, vel[1], atol=1e-7)
        r_b = R.T @ (q[3:5] - q[:2])  # the box's material point under the finger, frozen
        f_plus, b_plus = _points(q + EPS * v, r_b)
        f_minus, b_minus = _points(q - EPS * v, r_b)
        rel = ((f_plus - b_plus) - (f_minus - b_minus)) / (2 * EPS)
        n, t = R @ np.array([-1.0, 0.0]), R @ np.array([0.0, 1.0])
        np.testing.assert_allclose(Jn[2] @ v, n @ rel, atol=1e-7)
        np.testing.assert_allclose(Jt[2] @ v, t @ rel, atol=1e-7)


def test_finger_normal_is_the_face_normal_and_pushes_the_box() -> None:
    s = planar_pusher()
    for q in _configs():
        Jn, Jt, _ = s.eval_J(q)
        n = _rot(q[2]) @ np.array([-1.0, 0.0])  # the left face's outward normal
        t = _rot(q[2]) @ np.array([0.0, 1.0])
        np.testing.assert_allclose(Jn[2, 3:5], n, atol=1e-12)   # on the finger: +lambda n
        np.testing.assert_allclose(Jn[2, 0:2], -n, atol=1e-12)  # on the box: -lambda n
        np.testing.assert_allclose(Jt[2, 3:5], t, atol=1e-12)
        assert np.cross(np.r_[n[0], 0.0, n[1]], np.r_[t[0], 0.0, t[1]]) @ [0, 1, 0] == pytest.approx(1.0)
        # the box's moment of the normal impulse is that of -n applied at the finger's position
        arm = q[3:5] - q[:2]
        assert Jn[2, 2] == pytest.approx(arm[0] * (-n[1]) - arm[1] * (-n[0]), abs=1e-12)
    # level box, finger at mid-height: a unit normal impulse is a pure +x force on the box
    Jn, _, _ = s.eval_J([0.0, HH / 2, 0.0, -W / 2, HH / 2])
    np.testing.assert_allclose(Jn[2], [1.0, 0.0, 0.0, -1.0, 0.0], atol=1e-12)


def test_gap_is_invariant_under_rigid_motions_of_box_and_finger() -> None:
    s = planar_pusher()
    q = np.array([0.0, HH / 2, 0.0, -W / 2 - 0.1, 0.15])
    assert s.eval_phi(q)[2] == pytest.approx(0.1)
    th, d = 0.4, np.array([0.3, 0.05])
    R = _rot(th)
    moved = np.array([*(R @ q[:2] + d), th, *(R @ q[3:5] + d)])
    assert s.eval_phi(moved)[2] == pytest.approx(0.1, abs=1e-12)


def test_dynamics_terms() -> None:
    s = planar_pusher(m_box=2.0, m_finger=0.3, mu_ground=0.2, mu_finger=0.7, g=9.81)
    q = s.q_nominal
    np.testing.assert_allclose(s.eval_h(q, np.zeros(5)), [0.0, 2.0 * 9.81, 0.0, 0.0, 0.0])  # finger compensated
    np.testing.assert_allclose(np.diag(s.eval_M(q)), [2.0, 2.0, 2.0 * (W**2 + HH**2) / 12, 0.3, 0.3])
    np.testing.assert_allclose(s.eval_B(q), np.vstack([np.zeros((3, 2)), np.eye(2)]))
    np.testing.assert_allclose(s.mu, [0.2, 0.2, 0.7])
    np.testing.assert_allclose(s.eval_phi(q), [0.0, 0.0, 0.1], atol=1e-12)
    assert s.planar and s.contact_names == ("bottom_left", "bottom_right", "finger")


@pytest.mark.parametrize("kwargs, field", [
    ({"mu_finger": -0.1}, "mu_finger"), ({"mu_ground": float("nan")}, "mu_ground"),
    ({"width": 0.0}, "width"), ({"height": -1.0}, "height"), ({"m_box": "heavy"}, "m_box"),
    ({"m_finger": float("inf")}, "m_finger"), ({"g": -9.81}, "g"),
])
def test_bad_parameters_are_refused(kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        planar_pusher(**kwargs)
    assert err.value.field == field


def test_bad_face_and_configuration_are_refused() -> None:
    q, v = ca.SX.sym("q", 5), ca.SX.sym("v", 5)
    with pytest.raises(InputError, match="normal_body"):
        face_contact_2d(q, v, q[3:5], q[:2], q[2], (0.0, 0.0), 0.1)
    with pytest.raises(InputError, match="q"):
        finger_in_box_frame(np.zeros(4))
    with pytest.raises(InputError, match="q"):
        finger_in_box_frame(np.array([0, 0, np.nan, 0, 0]))
    np.testing.assert_allclose(np.asarray(ca.DM(finger_in_box_frame(ca.DM([0, 0.1, 0, -0.2, 0.15])))).ravel(),
                               [-0.2, 0.05], atol=1e-15)
