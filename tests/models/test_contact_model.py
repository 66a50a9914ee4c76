"""The assembled contact model: W, J, A, b against rigid-body kinematics, and input validation."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models import (
    GROUND,
    Contact,
    ContactModel,
    Manipulator,
    RigidBody,
    box_on_plane,
    link,
    random_problem,
    rotation_about,
)

# ---------------------------------------------------------------------------------------------
# an independent simulation of the motion with constant accelerations (for finite differences)
# ---------------------------------------------------------------------------------------------


def _rotvec_exp(w: np.ndarray) -> np.ndarray:
    th = np.linalg.norm(w)
    return np.eye(3) if th == 0 else rotation_about(w / th, th)


class _Motion:
    """Bodies of ``model`` moving for time ``t`` with accelerations ``qddot``, ``lddot``.

    Objects: ``x(t) = x + v t + a t^2 / 2``, ``omega(t) = omega + alpha t`` and ``R(t)`` from the
    Magnus expansion of ``Rdot = [omega(t)]x R`` (error O(t^5)). The manipulator: the product of
    exponentials of its joint twists (taken at the current configuration) at
    ``l(t) - l = ldot t + lddot t^2 / 2``.
    """

    def __init__(self, model: ContactModel, qddot: np.ndarray, lddot: np.ndarray, t: float):
        self.model, self.t = model, t
        self.obj = []
        for i, b in enumerate(model.objects):
            a, al = qddot[6 * i: 6 * i + 3], qddot[6 * i + 3: 6 * i + 6]
            w = np.asarray(b.angular_velocity)
            Om = w * t + 0.5 * al * t**2 - t**3 / 12.0 * np.cross(w, al)
            x = b.position + b.velocity * t + 0.5 * a * t**2
            self.obj.append((x, _rotvec_exp(Om), b.velocity + a * t, w + al * t, b.position))
        man = model.manipulator
        if man is not None:
            self.delta = man.joint_velocities * t + 0.5 * lddot * t**2
            self.ldot = man.joint_velocities + lddot * t

    def _joint_motion(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(R, d) of the rigid motion of the link carrying joint j's successor: y -> R y + d."""
        man = self.model.manipulator
        R, d = np.eye(3), np.zeros(3)
        for i in man.chain(j):
            Ri = rotation_about(man.axes[i], self.delta[i])
            di = man.origins[i] - Ri @ man.origins[i]
            R, d = R @ Ri, R @ di + d
        return R, d

    def rotation(self, ref) -> np.ndarray:
        if ref.kind == "object":
            return self.obj[ref.index][1]
        if ref.kind == "link":
            return self._joint_motion(ref.index)[0]
        return np.eye(3)

    def material_point(self, ref, p0: np.ndarray) -> np.ndarray:
        if ref.kind == "object":
            x, R, _, _, x0 = self.obj[ref.index]
            return x + R @ (p0 - x0)
        if ref.kind == "link":
            R, d = self._joint_motion(ref.index)
            return R @ p0 + d
        return p0

    def velocity_at(self, ref, y: np.ndarray) -> np.ndarray:
        if ref.kind == "object":
            x, _, v, w, _ = self.obj[ref.index]
            return v + np.cross(w, y - x)
        if ref.kind == "link":
            man = self.model.manipulator
            out = np.zeros(3)
            for j in man.chain(ref.index):
                parent = int(man.parents[j])
                R, d = self._joint_motion(parent) if parent >= 0 else (np.eye(3), np.zeros(3))
                a, o = R @ man.axes[j], R @ man.origins[j] + d
                out += self.ldot[j] * np.cross(a, y - o)
            return out
        return np.zeros(3)

    def contact_velocity(self, j: int) -> np.ndarray:
        c = self.model.contacts[j]
        face, point = (c.body_i, c.body_k) if c.face == "i" else (c.body_k, c.body_i)
        p = self.material_point(point, c.point)
        C = self.rotation(face) @ c.frame
        return C.T @ (self.velocity_at(c.body_i, p) - self.velocity_at(c.body_k, p))


def _fd_contact_acceleration(model: ContactModel, qddot: np.ndarray, lddot: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Central difference (Richardson-extrapolated) of v_j along the motion, as (a_n, a_t, a_o)."""

    def deriv(hh: float) -> np.ndarray:
        plus, minus = _Motion(model, qddot, lddot, hh), _Motion(model, qddot, lddot, -hh)
        return np.array([(plus.contact_velocity(j) - minus.contact_velocity(j)) / (2 * hh) for j in range(model.n_c)])

    d = (4 * deriv(h / 2) - deriv(h)) / 3
    return np.concatenate([d[:, 0], d[:, 1], d[:, 2]])


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,shape", [(1, (2, 3, 2)), (2, (3, 4, 3)), (3, (1, 5, 1)), (4, (2, 0, 3))])
def test_A_symmetric_psd_and_velocity_consistent(seed, shape):
    m = random_problem(seed, *shape)
    A = m.A
    assert np.allclose(A, A.T, atol=0, rtol=0)
    ev = np.linalg.eigvalsh(A)
    assert ev.min() >= -1e-10 * ev.max()
    # A = J_sys^T Minv J_sys (25), with J_sys = [W; J^T]
    Js = m.J_sys
    Minv = np.zeros((Js.shape[0], Js.shape[0]))
    Minv[: 6 * m.n_obj, : 6 * m.n_obj] = np.linalg.inv(m.M_obj)
    Minv[6 * m.n_obj:, 6 * m.n_obj:] = np.linalg.inv(m.M_man)
    assert np.allclose(A, Js.T @ Minv @ Js, rtol=1e-12, atol=1e-12 * np.abs(A).max())
    # v = W^T qdot - J ldot (6) equals the relative point velocities computed body by body
    mo = _Motion(m, np.zeros(6 * m.n_obj), np.zeros(m.n_l), 0.0)
    v = np.array([mo.contact_velocity(j) for j in range(m.n_c)])
    assert np.allclose(m.v, np.concatenate([v[:, 0], v[:, 1], v[:, 2]]), atol=1e-12)


@pytest.mark.parametrize("seed,shape", [(11, (2, 3, 2)), (12, (3, 5, 3)), (13, (1, 4, 2))])
def test_bias_and_b_equal_finite_difference_of_v(seed, shape):
    """a = W^T qddot - J lddot + bias is d/dt v along the motion; with c = 0 it is b (26)."""
    m = random_problem(seed, *shape)
    rng = np.random.default_rng(seed)
    scale = np.abs(m.b).max()
    # free motion (c = 0): the accelerations of (22)-(23) and a = b
    qdd, ldd = m.accelerations(np.zeros(3 * m.n_c))
    fd = _fd_contact_acceleration(m, qdd, ldd)
    assert np.abs(fd - m.b).max() <= 1e-6 * max(1.0, scale)
    # arbitrary accelerations: a = W^T qddot - J lddot + bias, and a = A c + b for forces c
    c = rng.normal(size=3 * m.n_c)
    qdd, ldd = m.accelerations(c)
    a = m.contact_accelerations(qdd, ldd)
    assert np.allclose(a, m.A @ c + m.b, atol=1e-10 * max(1.0, np.abs(a).max()))
    fd = _fd_contact_acceleration(m, qdd, ldd)
    assert np.abs(fd - a).max() <= 1e-6 * max(1.0, np.abs(a).max())


def test_bias_of_spinning_sliding_box_includes_coriolis_term():
    """A box spinning about the vertical while sliding: a_n = 0 at the ground, and the tangential
    bias is the centripetal acceleration of the corner in the ground frame."""
    h = np.array([0.3, 0.2, 0.1])
    w = 2.0
    box = RigidBody.box(h, 1.0, position=[0, 0, h[2]], velocity=[0.5, 0.0, 0.0], angular_velocity=[0, 0, w])
    p = np.array([h[0], h[1], 0.0])
    m = ContactModel([box], [Contact(0, GROUND, p, [0, 0, 1], [1, 0, 0])])
    r = p - box.position
    expected = np.cross([0, 0, w], np.cross([0, 0, w], r))  # omega x (omega x r)
    assert np.allclose(m.bias, [0.0, expected[0], expected[1]], atol=1e-14)
    assert m.sliding.tolist() == [0]


def test_manipulator_point_bias_matches_product_of_exponentials():
    rng = np.random.default_rng(5)
    n = 4
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    man = Manipulator(axes=axes, origins=rng.normal(size=(n, 3)), parents=[-1, 0, 1, 1],
                      joint_velocities=rng.normal(size=n), efforts=np.zeros(n), mass_matrix=np.eye(n),
                      g_man=np.zeros(n), h_man=np.zeros(n))
    p = rng.normal(size=3)
    box = RigidBody.box([0.1, 0.1, 0.1], 1.0, position=p + [0, 0, 0.1])  # at rest, carries the face
    for L in (2, 3):
        v = man.point_velocity(L, p)
        nrm = np.cross(v, rng.normal(size=3))
        nrm /= np.linalg.norm(nrm)  # normal orthogonal to the fingertip's velocity: (7) holds
        t = np.cross(nrm, rng.normal(size=3))
        t /= np.linalg.norm(t)
        model = ContactModel([box], [Contact(0, link(L), p, nrm, t, face="i")], manipulator=man)
        assert model.sliding.tolist() == [0]
        ldd = rng.normal(size=n)
        a = model.contact_accelerations(np.zeros(6), ldd)
        fd = _fd_contact_acceleration(model, np.zeros(6), ldd)
        assert np.abs(fd - a).max() <= 1e-6 * max(1.0, np.abs(a).max())


def test_manipulator_from_links_dynamics_match_lagrange():
    """M_man, h_man and g_man of from_links against Lagrange's equations by finite differences:
    h = Mdot ldot - 1/2 grad_l (ldot^T M ldot), g = grad_l V."""
    rng = np.random.default_rng(8)
    n = 3
    parents = [-1, 0, 1]
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    origins = rng.normal(size=(n, 3))
    centers = origins + 0.3 * rng.normal(size=(n, 3))
    masses = rng.uniform(0.5, 1.5, n)
    inertias = np.array([np.diag(rng.uniform(0.01, 0.05, 3)) for _ in range(n)])
    ld = rng.normal(size=n)
    man = Manipulator.from_links(axes, origins, parents, ld, masses, centers, inertias)
    assert np.linalg.eigvalsh(np.asarray(man.mass_matrix)).min() > 0

    def at(delta: np.ndarray) -> tuple[np.ndarray, float]:
        """(M_man, potential energy) at joint displacement delta (product of exponentials)."""
        R, d = np.eye(3), np.zeros(3)
        ax_t, org_t, cen_t, I_t = [], [], [], []
        for j in range(n):
            ax_t.append(R @ axes[j])
            org_t.append(R @ origins[j] + d)
            Rj = rotation_about(axes[j], delta[j])
            R, d = R @ Rj, R @ (origins[j] - Rj @ origins[j]) + d
            cen_t.append(R @ centers[j] + d)
            I_t.append(R @ inertias[j] @ R.T)
        m2 = Manipulator.from_links(np.array(ax_t), np.array(org_t), parents, ld, masses, np.array(cen_t), np.array(I_t))
        V = 9.81 * float(masses @ np.array(cen_t)[:, 2])
        return np.asarray(m2.mass_matrix), V

    eps = 1e-5
    Mdot = (at(ld * eps)[0] - at(-ld * eps)[0]) / (2 * eps)
    grad_T = np.zeros(n)
    grad_V = np.zeros(n)
    for k in range(n):
        e = np.zeros(n)
        e[k] = eps
        (Mp, Vp), (Mm, Vm) = at(e), at(-e)
        grad_T[k] = (ld @ Mp @ ld - ld @ Mm @ ld) / (2 * eps)
        grad_V[k] = (Vp - Vm) / (2 * eps)
    assert np.allclose(man.h_man, Mdot @ ld - 0.5 * grad_T, rtol=1e-6, atol=1e-7)
    assert np.allclose(man.g_man, grad_V, rtol=1e-6, atol=1e-7)
    assert np.allclose(man.efforts, np.asarray(man.g_man) + np.asarray(man.h_man))


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _box() -> RigidBody:
    return RigidBody.box([0.5, 0.5, 0.1], 1.0, position=[0, 0, 0.1])


def _contact(**kw) -> Contact:
    args = dict(body_i=0, body_k="ground", point=[0.5, 0.5, 0.0], normal=[0, 0, 1], tangent=[1, 0, 0], mu=0.5)
    args.update(kw)
    return Contact(**args)


@pytest.mark.parametrize(
    "make,field",
    [
        (lambda: _contact(mu=-0.1), "mu"),
        (lambda: _contact(mu=float("nan")), "mu"),
        (lambda: _contact(point=[0, np.inf, 0]), "point"),
        (lambda: _contact(normal=[0, 0, 2]), "normal"),
        (lambda: _contact(tangent=[1, 0, 0.1]), "tangent"),
        (lambda: _contact(tangent=[0, 0, 1]), "tangent"),
        (lambda: _contact(other=[0, -1, 0]), "other"),
        (lambda: _contact(body_k=0), "body_k"),
        (lambda: RigidBody(mass=-1.0, inertia=np.eye(3)), "mass"),
        (lambda: RigidBody(mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "inertia"),
        (lambda: RigidBody(mass=1.0, inertia=-np.eye(3)), "inertia"),
        (lambda: RigidBody(mass=1.0, inertia=np.eye(3), rotation=2 * np.eye(3)), "rotation"),
        (lambda: RigidBody(mass=1.0, inertia=np.eye(3), velocity=[np.nan, 0, 0]), "velocity"),
        (lambda: Manipulator(axes=[[0, 0, 1]], origins=[[0, 0, 0]], parents=[-1], joint_velocities=[0],
                             efforts=[0], mass_matrix=[[-1.0]], g_man=[0], h_man=[0]), "mass_matrix"),
        (lambda: Manipulator(axes=[[0, 0, 2]], origins=[[0, 0, 0]], parents=[-1], joint_velocities=[0],
                             efforts=[0], mass_matrix=[[1.0]], g_man=[0], h_man=[0]), "axes"),
    ],
)
def test_invalid_input_names_the_field(make, field):
    with pytest.raises(InputError) as info:
        make()
    assert info.value.field.endswith(field)


def test_model_validation_names_contact_and_field():
    with pytest.raises(InputError) as info:
        ContactModel([_box()], [_contact(), _contact(body_i=3)])
    assert info.value.field == "contacts[1].body_i"
    # (7): a box moving into the ground
    moving = RigidBody.box([0.5, 0.5, 0.1], 1.0, position=[0, 0, 0.1], velocity=[0, 0, -1.0])
    with pytest.raises(InputError) as info:
        ContactModel([moving], [_contact()])
    assert info.value.field == "contacts[0]" and "(7)" in str(info.value)
    with pytest.raises(InputError) as info:
        ContactModel([_box()], [_contact(body_k=link(0))])
    assert info.value.field == "contacts[0].body_k"


def test_rolling_and_sliding_sets():
    rest = box_on_plane(speed=0.0)
    assert rest.rolling.tolist() == [0, 1, 2, 3] and rest.sliding.size == 0
    slide = box_on_plane(speed=0.7)
    assert slide.sliding.tolist() == [0, 1, 2, 3]
    assert np.allclose(slide.v_t, 0.7) and np.allclose(slide.v_n, 0.0) and np.allclose(slide.v_o, 0.0)
    # a box spinning about one corner: that corner rolls, the others slide
    h = np.array([0.5, 0.5, 0.1])
    corner = np.array([-0.5, -0.5, 0.0])
    w = np.array([0.0, 0.0, 1.5])
    box = RigidBody.box(h, 1.0, position=[0, 0, 0.1], velocity=np.cross(w, np.array([0, 0, 0.1]) - corner),
                        angular_velocity=w)
    pts = [[-0.5, -0.5, 0], [0.5, -0.5, 0], [0.5, 0.5, 0], [-0.5, 0.5, 0]]
    m = ContactModel([box], [_contact(point=p) for p in pts])
    assert m.rolling.tolist() == [0] and m.sliding.tolist() == [1, 2, 3]


def test_with_mu_keeps_arrays_and_changes_mu():
    m = random_problem(3, 2, 3, 2, mu=0.2)
    m2 = m.with_mu(0.9)
    assert np.all(m2.mu == 0.9) and all(c.mu == 0.9 for c in m2.contacts)
    assert np.all(m.mu == 0.2) and all(c.mu == 0.2 for c in m.contacts)
    assert m2.A is m.A and np.array_equal(m2.b, m.b)
    with pytest.raises(InputError):
        m.with_mu(-1.0)


def test_frame_rotation_invariance_of_A_diagonal_blocks():
    """Rotating the tangent pair (t, o) about n leaves (A_nn, b_n) unchanged."""
    m = box_on_plane(slope=0.2)
    R = m.contacts[0].frame
    ang = 0.7
    t2 = np.cos(ang) * R[:, 1] + np.sin(ang) * R[:, 2]
    c2 = [Contact(c.body_i, c.body_k, c.point, c.normal, t2, c.mu) for c in m.contacts]
    m2 = ContactModel(m.objects, c2)
    n = m.n_c
    assert np.allclose(m.A[:n, :n], m2.A[:n, :n]) and np.allclose(m.b[:n], m2.b[:n])
