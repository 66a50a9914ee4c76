"""Convex quadratic and cone programs: QPs through CasADi's QP solvers and bounded least squares
(:mod:`.qp`), linear complementarity over Coulomb cones (:mod:`.cone_lcp`) and Drumwright's
compliant contact problem, an LCP solved as its QP (:mod:`.compliant`).

The face of the cone-QP solvers.
"""
from contactmp.solvers.cone_qp.compliant import solve_compliant_lcp
from contactmp.solvers.cone_qp.cone_lcp import CONE_SOLVERS, cone_lcp_residual, solve_cone_lcp
from contactmp.solvers.cone_qp.qp import (
    CONE_QP_SOLVERS,
    QP_SOLVERS,
    available_qp_solvers,
    bounded_least_squares,
    solve_cone_qp,
    solve_qp,
)

__all__ = ["solve_compliant_lcp", "CONE_SOLVERS", "cone_lcp_residual", "solve_cone_lcp", "CONE_QP_SOLVERS",
           "QP_SOLVERS", "available_qp_solvers", "bounded_least_squares", "solve_cone_qp", "solve_qp"]
