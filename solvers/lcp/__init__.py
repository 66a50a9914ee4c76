"""Linear complementarity problems LCP(q, M): find ``z >= 0`` with ``w = M z + q >= 0`` and
``z^T w = 0``.

The face of the LCP solvers. :mod:`.problem` holds what every LCP solver shares (the checks of
``M, q``, the independent residual ``||min(z, M z + q)||_inf`` and the verified result); the
solvers are :mod:`.lemke` (Lemke's complementary pivoting), :mod:`.newton` (the semismooth Newton
method), :mod:`.fip` (the feasible interior-point method), :mod:`.pgs` (projected Gauss-Seidel),
:mod:`.ipopt` and :mod:`.cyipopt` (the LCP as an MPCC through IPOPT), chosen by name through
:func:`contactmp.solvers.solve_lcp`; :mod:`.certificates` counts solutions and proves uniqueness
(HiGHS MILPs, loaded on first use).
"""
from __future__ import annotations

from typing import Any

from contactmp.solvers.lcp.problem import (
    judged_result,
    lcp_residual,
    polish_lcp,
    residual_kernel,
    rounding_floor,
    validate_lcp,
    verified_result,
    w_and_residual_kernel,
)

#: names of :mod:`.certificates` this face gives (it imports SciPy's HiGHS: loaded on first use)
CERTIFICATES = ("Verdict", "MilpCertificate", "lcp_existence_milp", "lcp_second_solution_milp", "Continuum",
                "Enumeration", "enumerate_lcp_solutions", "MatrixCertificate", "is_p_matrix", "is_copositive",
                "is_strictly_copositive")

__all__ = ["judged_result", "lcp_residual", "polish_lcp", "residual_kernel", "rounding_floor", "validate_lcp",
           "verified_result", "w_and_residual_kernel", *CERTIFICATES]


def __getattr__(name: str) -> Any:
    """The certificates' names, imported on first use."""
    if name in CERTIFICATES:
        from contactmp.solvers.lcp import certificates

        return getattr(certificates, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
