"""The projected gradient method (PGM) of Pan and Hauser's nonconvex maximal-dissipation step
(:mod:`.projected_gradient`), its compiled kernels (:mod:`._kernels`) and the instruction tape that
evaluates CasADi expressions inside them (:mod:`.sx_tape`).

The face of the PGM solver.
"""
from contactmp.solvers.pgm._kernels import PGMTapes
from contactmp.solvers.pgm.projected_gradient import (
    QP_ROUNDING_STEP,
    adaptive_step,
    pgm,
    project,
    project_W,
    prox_qp,
    qp_kkt_residual,
    stationarity,
)
from contactmp.solvers.pgm.sx_tape import Tape

__all__ = ["PGMTapes", "QP_ROUNDING_STEP", "adaptive_step", "pgm", "project", "project_W", "prox_qp",
           "qp_kkt_residual", "stationarity", "Tape"]
