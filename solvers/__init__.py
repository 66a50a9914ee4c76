"""Solvers and reductions: LCP, MCP, cone and NLP/MPCC solvers, chosen by name from registries."""
from contactmp.solvers.lcp import lcp_residual, validate_lcp
from contactmp.solvers.registry import (
    DEFAULT_FC3D_ORDER,
    DEFAULT_LCP_ORDER,
    FC3D_SOLVERS,
    LCP_SOLVERS,
    solve_fc3d,
    solve_fc3d_batch,
    solve_lcp,
    solve_lcp_batch,
)

__all__ = [
    "lcp_residual", "validate_lcp", "solve_lcp", "LCP_SOLVERS", "DEFAULT_LCP_ORDER",
    "solve_fc3d", "FC3D_SOLVERS", "DEFAULT_FC3D_ORDER", "solve_lcp_batch", "solve_fc3d_batch",
]
