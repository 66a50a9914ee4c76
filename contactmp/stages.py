"""Repeated stages of a :class:`~contactmp.program.Program`: one symbolic copy of a block of rows
that the program repeats at many places (the knots of a transcription).

A transcription that composes the same step ``N`` times writes its rows ``N`` times into the
Program (the Program is the plain SX IR that residual checks, relaxations and the Pyomo twin read).
It may also declare them as a :class:`StageGroup`: a :class:`StageTemplate`, the rows
``g_T(z, p_T)`` of one step in its own symbols ``z`` (local variables) and ``p_T`` (local
parameters), and for every stage ``k`` the positions ``x_index[k]``, ``p_index[k]`` and
``g_index[k]`` such that

    g[g_index[k]](x, p) == g_T(x[x_index[k]], p[p_index[k]])      for every x, p.

A solver may then build derivatives of ``g_T`` once and evaluate them at every stage
(:mod:`contactmp.solvers.structured`), so that its build time and memory do not grow with the
size of the robot times ``N``. :meth:`StageGroup.check` verifies the identity numerically at
seeded random points before the group is accepted (a group that does not describe its program is
refused, never used).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from contactmp.errors import InputError

__all__ = ["StageTemplate", "StageGroup"]

#: relative agreement of a stage's rows with its template that :meth:`StageGroup.check` demands
#: (the same SX operations in the same order give the same floating-point numbers; 1e-12 leaves
#: room for CasADi reordering a sum)
STAGE_CHECK_RTOL = 1e-12


@dataclass(eq=False)
class StageTemplate:
    """The rows ``g_T(z, p_T)`` of one stage: ``z`` (SX column of pure symbols, ``n_z``), ``p_T``
    (SX column, ``n_p``, may be empty) and ``g`` (SX column, ``n_r`` rows); ``name`` labels it."""

    name: str
    z: ca.SX
    p: ca.SX
    g: ca.SX
    _function: ca.Function | None = field(default=None, repr=False)

    @property
    def n_z(self) -> int:
        """Number of local variables."""
        return int(self.z.shape[0])

    @property
    def n_p(self) -> int:
        """Number of local parameters."""
        return int(self.p.shape[0])

    @property
    def n_r(self) -> int:
        """Number of rows."""
        return int(self.g.shape[0])

    @property
    def function(self) -> ca.Function:
        """``(z, p_T) -> g_T`` as a casadi Function (built on first use)."""
        if self._function is None:
            label = re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z]", "_", self.name)).strip("_")
            self._function = ca.Function(f"stage_{label}" if label else "stage", [self.z, self.p], [self.g],
                                         ["z", "p"], ["g"])
        return self._function


@dataclass(eq=False)
class StageGroup:
    """A :class:`StageTemplate` placed at ``n_stages`` places of a program: integer arrays
    ``x_index`` (``n_stages x n_z``), ``p_index`` (``n_stages x n_p``) and ``g_index``
    (``n_stages x n_r``) into the program's ``x``, ``p`` and ``g``; the row sets of different
    stages are disjoint."""

    template: StageTemplate
    x_index: np.ndarray
    p_index: np.ndarray
    g_index: np.ndarray

    def __post_init__(self) -> None:
        t = self.template
        for name, arr, width in (("x_index", self.x_index, t.n_z), ("p_index", self.p_index, t.n_p),
                                 ("g_index", self.g_index, t.n_r)):
            a = np.asarray(arr)
            if a.ndim != 2 or a.shape[1] != width or (a.size and not np.issubdtype(a.dtype, np.integer)):
                raise InputError(name, f"must be an integer array of shape (n_stages, {width}), got {a.shape}")
            setattr(self, name, a.astype(np.int64))
        n = {self.x_index.shape[0], self.p_index.shape[0], self.g_index.shape[0]}
        if len(n) != 1 or self.x_index.shape[0] == 0:
            raise InputError("x_index", f"x_index, p_index and g_index must have the same number (>= 1) of "
                                        f"stages, got {self.x_index.shape[0]}, {self.p_index.shape[0]}, "
                                        f"{self.g_index.shape[0]}")
        if np.unique(self.g_index).size != self.g_index.size:
            raise InputError("g_index", "every row may belong to one stage only")
        for name, arr in (("x_index", self.x_index), ("p_index", self.p_index)):
            if any(np.unique(row).size != row.size for row in arr):
                raise InputError(name, "the positions of one stage must be distinct")

    @property
    def n_stages(self) -> int:
        """Number of stages."""
        return int(self.x_index.shape[0])

    def check(self, x: ca.SX, p: ca.SX, g: ca.SX, seed: int = 0) -> None:
        """Raise InputError (field ``stages``) unless ``g[g_index[k]] == g_T(x[x_index[k]],
        p[p_index[k]])`` at two seeded random points (entries uniform in [-1, 1], parameters too),
        to :data:`STAGE_CHECK_RTOL` relative to ``max(1, |g|)``; points where either side is not
        finite are redrawn (up to 10 times)."""
        n_x, n_p, n_g = x.shape[0], p.shape[0], g.shape[0]
        for name, arr, n in (("x_index", self.x_index, n_x), ("p_index", self.p_index, n_p),
                             ("g_index", self.g_index, n_g)):
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise InputError(name, f"positions must lie in [0, {n}), got [{arr.min()}, {arr.max()}]")
        full = ca.Function("stage_check_full", [x, p], [g])
        mapped = self.template.function.map(self.n_stages)
        rng = np.random.default_rng(seed)
        checked = 0
        for _ in range(10):
            xv, pv = rng.uniform(-1.0, 1.0, n_x), rng.uniform(-1.0, 1.0, n_p)
            with np.errstate(all="ignore"):
                gv = np.asarray(full(xv, pv), dtype=float).reshape(-1)
                gt = np.asarray(mapped(xv[self.x_index].T, pv[self.p_index].T), dtype=float).T
            want = gv[self.g_index]
            if not (np.isfinite(want).all() and np.isfinite(gt).all()):
                continue
            err = np.abs(gt - want) / np.maximum(1.0, np.abs(want))
            if err.size and err.max() > STAGE_CHECK_RTOL:
                k, r = np.unravel_index(int(np.argmax(err)), err.shape)
                raise InputError("stages", f"stage {k} of template {self.template.name!r} does not match its "
                                           f"program: row {int(self.g_index[k, r])} differs by {err[k, r]:.3g} "
                                           "(relative)")
            checked += 1
            if checked == 2:
                return
        raise InputError("stages", f"template {self.template.name!r} could not be checked: its rows were not "
                                   "finite at 10 random points")
