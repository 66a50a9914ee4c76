"""LCP(q, M) as an MPCC solved by IPOPT through cyipopt (registry name ``"cyipopt"``).

Same method as :mod:`contactmp.solvers.lcp.ipopt` (Scholtes homotopy on ``0 <= z _|_ M z + q >= 0``,
active-set polish, independent residual check); IPOPT is called through ``cyipopt.Problem`` with
callbacks built from CasADi Functions instead of ``casadi.nlpsol``.
"""
from __future__ import annotations

from typing import Any

from contactmp.progress import Reporter
from contactmp.result import Result
from contactmp.solvers.lcp.ipopt import Options, solve_with_backend

NAME = "cyipopt"
BACKEND = "cyipopt"

__all__ = ["NAME", "Options", "solve"]


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) (find ``z >= 0`` with ``w = M z + q >= 0``, ``z^T w = 0``) with IPOPT via cyipopt.

    Options: ``tol``, ``sigma_min``, ``max_iter`` (per NLP), ``strategy``, ``time_limit`` (see
    :class:`Options` and :func:`~contactmp.solvers.lcp.ipopt.solve_with_backend`). Never raises
    on non-convergence; ``solved`` only after the independent residual check.
    """
    return solve_with_backend(M, q, BACKEND, NAME, options, progress, **overrides)
