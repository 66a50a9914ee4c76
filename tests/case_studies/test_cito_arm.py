"""The articulated manipulation tasks of the cito studies: the two-link arm and the two-finger hand
(models/arm_tasks.py) have the kinematics and dynamics they claim, and the tasks start and end
where their docstrings say."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.case_studies import _cito
from contactmp.errors import InputError
from contactmp.models.arm_tasks import arm_fingertip, two_finger_rotation, two_link_arm_box


def _rates(system, q: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d phi / dt along qdot = v, by central differences."""
    return (system.eval_phi(q + eps * v) - system.eval_phi(q - eps * v)) / (2 * eps)


def test_arm_kinematics_and_dynamics() -> None:
    s = two_link_arm_box(**_cito.ARM_SYSTEM)
    base, l1, l2 = _cito.ARM_SYSTEM["base"], _cito.ARM_SYSTEM["l1"], _cito.ARM_SYSTEM["l2"]
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = np.r_[rng.normal(0, 0.05, 2) + [0.0, 0.1], rng.normal(0, 0.1), rng.uniform(-1, 0.5), rng.uniform(-2, 0)]
        v = rng.normal(size=5)
        # the fingertip is at the arm's forward kinematics; its gap to the left face is n . (tip - c) - w/2
        tip = arm_fingertip(q, base, l1, l2)
        a1, a12 = q[3], q[3] + q[4]
        np.testing.assert_allclose(tip, [base[0] + l1 * np.cos(a1) + l2 * np.cos(a12),
                                         base[1] + l1 * np.sin(a1) + l2 * np.sin(a12)], atol=1e-14)
        n = np.array([-np.cos(q[2]), -np.sin(q[2])])
        assert s.eval_phi(q)[2] == pytest.approx(n @ (tip - q[:2]) - 0.1, abs=1e-12)
        # every contact's normal row is the rate of its gap
        Jn, Jt, Jo = s.eval_J(q)
        np.testing.assert_allclose(Jn @ v, _rates(s, q, v), atol=1e-7)
        assert not np.any(Jo)
        M = s.eval_M(q)
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 0
    # at rest the generalized forces are the gravity load: the box's weight and the links' moments
    q = np.array([0.0, 0.1, 0.0, 0.0, 0.0])  # arm straight along +x
    m, g = _cito.ARM_SYSTEM["link_mass"], 9.81
    h = s.eval_h(q, np.zeros(5))
    np.testing.assert_allclose(h[:3], [0.0, 9.81, 0.0], atol=1e-12)
    np.testing.assert_allclose(h[3:], [m * g * (l1 / 2 + l1 + l2 / 2), m * g * l2 / 2], atol=1e-12)


def test_arm_joint_angles_reach_the_tip() -> None:
    base, l1, l2 = _cito.ARM_SYSTEM["base"], _cito.ARM_SYSTEM["l1"], _cito.ARM_SYSTEM["l2"]
    for tip in [(-0.3, 0.1), (0.2, 0.1), (-0.1, 0.17)]:
        a = _cito.arm_joint_angles(tip)
        assert a[1] <= 0  # elbow up
        np.testing.assert_allclose(arm_fingertip(np.r_[0, 0, 0, a], base, l1, l2), tip, atol=1e-12)
    with pytest.raises(InputError, match="tip"):
        _cito.arm_joint_angles((2.0, 0.1))


def test_two_finger_hand_contacts() -> None:
    s = two_finger_rotation(**_cito.ROTATE_SYSTEM)
    np.testing.assert_allclose(s.eval_phi(s.q_nominal), 0.0, atol=1e-15)  # both fingertips on their faces
    rng = np.random.default_rng(1)
    q = np.asarray(s.q_nominal, float) + rng.normal(0, 0.02, 7)
    v = rng.normal(size=7)
    Jn, Jt, _ = s.eval_J(q)
    np.testing.assert_allclose(Jn @ v, _rates(s, q, v), atol=1e-7)
    # a squeeze (p_n, p_n) on the level box is balanced: no net force or moment on the box
    Jn0, Jt0, _ = s.eval_J(np.asarray(s.q_nominal, float))
    np.testing.assert_allclose((Jn0.T @ [1.0, 1.0])[:3], 0.0, atol=1e-14)
    # friction on both faces (upwards on the box) carries the box's weight: 2 mu F >= m g
    lift = -(Jt0.T @ [1.0, -1.0])[1]  # the box's z row of the two tangential impulses
    assert abs(lift) == pytest.approx(2.0)


@pytest.mark.parametrize("task", ["arm-push", "arm-pivot", "rotate"])
def test_task_guess_starts_and_ends_on_the_goal(task: str) -> None:
    to = _cito.TASKS[task].build("pyramid", True)
    x = to.initial_guess()
    prog = to.program
    q0, qN = prog.value(to.q[0], x), prog.value(to.q[-1], x)
    np.testing.assert_allclose(prog.value(to.v[-1], x), 0.0)
    res = prog.residuals(x)
    assert np.isfinite(res["constraint"])
    phi0 = to.system.eval_phi(q0)
    assert phi0.min() >= -1e-12  # nothing starts inside
    if task == "arm-push":
        assert qN[0] == pytest.approx(0.3) and phi0[2] == pytest.approx(0.2)
    elif task == "arm-pivot":
        assert qN[2] == pytest.approx(-0.3) and phi0[2] == pytest.approx(0.0, abs=1e-12)
    else:
        assert qN[2] == pytest.approx(_cito.ROTATE_ANGLE)


def test_study_records_and_prints_the_force_gap(tmp_path) -> None:
    """Every start's record holds the largest gap phi(q_{k+1}) at which its force acts, and the studies'
    table prints the largest over the converged starts: the box rests on the ground (gap 0 where it is
    pushed), so it is at rounding level there."""
    from contactmp.case_studies._study import StudyRun

    study = StudyRun("cito-box", tmp_path, quick=True, seed=0)
    records = _cito.run_grid(study, ["box"], ["pyramid"], ["scholtes"], starts=1)
    rec = records[0]
    assert rec["converged"]
    to = _cito.TASKS["box"].build("pyramid", True)
    q = np.asarray(rec["trajectory"]["q"])
    pn = np.asarray(rec["trajectory"]["p_n"])
    phi_next = np.array([to.system.eval_phi(qk) for qk in q[1:]])
    acting = pn > 1e-6 * max(1.0, pn.max())
    assert rec["force_gap"] == pytest.approx(phi_next[acting].max(), abs=1e-15)
    assert abs(rec["force_gap"]) <= 1e-9
    rows = _cito.summarize(records)
    assert rows[0]["force_gap_max"] == rec["force_gap"]
    table = _cito.summary_table(rows)
    assert "largest gap with force" in table
