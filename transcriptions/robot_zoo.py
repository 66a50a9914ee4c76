"""Every robot of example-robot-data simulated for a while (the robot table of ``docs/robots.md``,
``benchmarks/robot_zoo.py``).

:func:`simulate_example_robot` loads a robot with
:func:`~contactmp.models.example_robots.example_robot` and runs time stepping with the default
formulation: a stable PD holding the initial joints (``Kp = M_jj (2 pi f)^2``,
``Kd = 2 M_jj (2 pi f)``) plus the static feed-forward torques (gravity compensation, or the
least-squares torques that stand with the feet's forces), then the physics verdict of every step.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contactmp.errors import ContactMPError
from contactmp.models.example_robots import ExampleRobot, find_robot, example_robot, foot_links, modelled_joints
from contactmp.models.urdf import adam_urdf_text, read_urdf, static_torques
from contactmp.transcriptions.time_stepping import TimeStepping

__all__ = ["ZooResult", "simulate_example_robot"]


@dataclass
class ZooResult:
    """One robot's row of the zoo table (:func:`simulate_example_robot`)."""

    robot: str
    base: str  # "free-flyer" or "fixed"
    loaded: bool
    refused: str = ""  # the error that refused it
    n_q: int = 0
    n_v: int = 0
    dof: int = 0  # joints modelled
    contacts: int = 0
    mode: str = ""  # "standing", "dropped" or "held" (fixed base)
    load_s: float = math.nan
    steps: int = 0
    ms_per_step: float = math.nan  # median wall time of a step (Result.time_s)
    ms_first_step: float = math.nan  # the first step's (it builds the step's functions)
    status_counts: dict[str, int] = field(default_factory=dict)
    n_unphysical: int = 0
    min_gap: float = math.nan  # the lowest contact gap over the run (m)
    penetration_tol: float = math.nan  # the formulation's allowed penetration (PhysicsTolerances)
    base_drift: float = math.nan  # free-flyer: the largest distance of the base from its start (m)
    filled: int = 0  # URDF spec defaults written out for adam
    locked: tuple[str, ...] = ()  # mimic, prismatic and massless joints locked at 0
    verdict: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = dict(self.__dict__)
        d["locked"] = list(self.locked)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def simulate_example_robot(name: str | ExampleRobot, duration: float = 1.0, h: float = 0.01,
                           formulation: str = "pyramid", pd_hz: float = 5.0,
                           drop: float = 0.02) -> ZooResult:
    """Load ``name`` and simulate it for ``duration`` s with step ``h`` (module docstring): a
    free-flyer with feet stands (feet on the ground), one without feet is dropped from ``drop``,
    a fixed base is held by the PD. A robot that cannot be loaded is returned with ``loaded=False``
    and the contactmp error's message in ``refused`` (any other exception propagates)."""
    robot = find_robot(name)
    res = ZooResult(robot.name, "free-flyer" if robot.free_flyer else "fixed", False)
    t0 = time.perf_counter()
    try:
        info = read_urdf(robot.urdf)
        res.filled = len(adam_urdf_text(info)[1])
        feet = foot_links(info) if robot.free_flyer else ()
        sys_ = example_robot(robot, drop=0.0 if feet or not robot.free_flyer else drop)
    except ContactMPError as exc:
        res.refused = str(exc)
        res.verdict = "refused"
        return res
    res.load_s = time.perf_counter() - t0
    res.loaded = True
    res.locked = tuple(j for j in info.movable_joints if j not in modelled_joints(info))
    res.n_q, res.n_v, res.contacts = sys_.n_q, sys_.n_v, sys_.n_c
    res.dof = sys_.n_v - (6 if robot.free_flyer else 0)
    res.mode = "held" if not robot.free_flyer else ("standing" if feet else "dropped")
    n = int(round(duration / h))
    if n == 0:
        return res
    q0 = sys_.q_nominal
    M = sys_.eval_M(q0)
    Bq = sys_.eval_B(q0)
    mjj = np.maximum(np.diag(Bq.T @ M @ Bq), 1e-9) if sys_.n_u else np.zeros(0)
    w = 2 * np.pi * pd_hz
    u_ff = static_torques(sys_, q0)[0] if sys_.n_u else np.zeros(0)
    n_b = 7 if robot.free_flyer else 0
    s0 = q0[n_b:].copy()
    kw: dict[str, Any] = {}
    if sys_.n_u:
        kw["pd_gains"] = (mjj * w * w, 2 * mjj * w)
    ts = TimeStepping(sys_, h, formulation, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = ts.simulate(q0, np.zeros(sys_.n_v), u_ff if sys_.n_u else None, n,
                         targets=(lambda t: (s0, None)) if sys_.n_u else None)
    res.steps = tr.n_steps
    if tr.n_steps:
        res.ms_per_step = 1e3 * float(np.median(tr.time_s))
        res.ms_first_step = 1e3 * float(tr.time_s[0])
    res.status_counts = tr.status_counts
    res.n_unphysical = tr.n_unphysical
    res.penetration_tol = float(ts.tolerances.penetration)
    finite = [q for q in tr.q if np.isfinite(q).all()]  # a run stops at a non-finite state
    if sys_.n_c:
        res.min_gap = float(min(sys_.eval_phi(q).min() for q in finite))
    if robot.free_flyer:
        res.base_drift = float(max(np.linalg.norm(q[:3] - q0[:3]) for q in finite))
    ok = tr.n_failed == 0 and not tr.stopped
    res.verdict = "ok" if ok else (f"stopped: {tr.stopped}" if tr.stopped else
                                   f"{tr.n_failed} steps not solved")
    return res
