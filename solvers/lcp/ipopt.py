"""LCP(q, M) as an MPCC solved by IPOPT through CasADi (registry name ``"ipopt"``).

The LCP ``z >= 0, w = M z + q >= 0, z^T w = 0`` is written as the Program
``0 <= z _|_ M z + q >= 0`` (no objective) and solved by :func:`contactmp.solvers.nlp.solve.solve_program`
with an MPCC strategy: by default the l1 elastic penalty (``rho * sum_i z_i w_i`` in the objective,
rho increased until complementarity holds), which solved all 16 solvable shared LCPs where Scholtes'
relaxation (``z_i w_i <= sigma``, sigma from 1 down to ``sigma_min``; ``strategy="scholtes"``)
missed two (lcp_enum_fails, lcp_tobenna). After every relaxed NLP the iterate is polished by the active-set step
:func:`~contactmp.solvers.lcp.problem.polish_lcp` (``M_BB z_B = -q_B`` on the guessed basis
``B = {z_i > w_i}``, also tried on the diagonally scaled LCP), which ends the homotopy as soon as it yields an exact complementary point;
the final answer is judged by :func:`~contactmp.solvers.lcp.problem.verified_result`
(``||min(z, M z + q)||_inf <= tol``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import casadi as ca
import numpy as np
import scipy.sparse as sp

from contactmp.errors import OptionError, did_you_mean
from contactmp.program import Program, Variables
from contactmp.progress import Reporter, watch_for
from contactmp.result import Result, Status
from contactmp.solvers.lcp.problem import lcp_residual, polish_lcp, validate_lcp, verified_result
from contactmp.solvers.options import SolverOptions
from contactmp.solvers.nlp import STRATEGIES, solve_program

NAME = "ipopt"
BACKEND = "casadi"

__all__ = ["NAME", "Options", "solve", "lcp_program", "solve_with_backend"]


@dataclass
class Options(SolverOptions):
    """Options of the IPOPT LCP solvers (``"ipopt"`` and ``"cyipopt"``).

    Attributes
    ----------
    tol : accepted LCP residual ``||min(z, M z + q)||_inf`` (also the MPCC's ``comp_tol``).
    sigma_min : last relaxation parameter of the Scholtes homotopy (used only with
        ``strategy="scholtes"``; the default l1 elastic strategy has no relaxation parameter).
    max_iter : IPOPT iterations per NLP.
    strategy : MPCC strategy, one of ``contactmp.solvers.nlp.solve.STRATEGIES``.
    time_limit : wall-clock seconds for the whole solve (``None``: none).
    """

    tol: float = 1e-8
    sigma_min: float = 1e-9
    max_iter: int = 3000
    strategy: str = "elastic_l1"

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        if isinstance(self.sigma_min, bool) or not isinstance(self.sigma_min, (int, float)) or not (
            0 < self.sigma_min <= 1
        ):
            raise OptionError(f"sigma_min must be in (0, 1], got {self.sigma_min!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise OptionError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.strategy not in STRATEGIES:
            hint = did_you_mean(self.strategy, STRATEGIES)
            raise OptionError(f"unknown strategy '{self.strategy}' (known: {', '.join(STRATEGIES)}){hint}")


def lcp_program(M: np.ndarray, q: np.ndarray) -> tuple[Program, Variables]:
    """The Program ``0 <= z _|_ M z + q >= 0`` of LCP(q, M) (``M`` sparse in the SX graph)."""
    n = q.shape[0]
    prog = Program("lcp")
    z = prog.add_variables("z", n, lb=0.0)
    w = ca.mtimes(ca.DM(sp.csc_matrix(M)), z.sym) + ca.DM(q)
    prog.add_complementarity(z, w, name="z_perp_w")
    return prog, z


def _polish(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    """The better of :func:`polish_lcp` on LCP(q, M) and on its diagonally scaled form.

    The basis guess ``z_i > w_i`` of :func:`polish_lcp` compares numbers of different units when
    the diagonal of ``M`` is far from 1 (lcp_mmc: ``M_ii ~ 2e5``, ``z ~ 1e-5``). With
    ``D = diag(1 / |M_ii|)`` (1 where ``M_ii = 0``), ``z = D y`` turns LCP(q, M) into
    LCP(q, M D), whose basis guess ``y_i = |M_ii| z_i > w_i`` is scale-free.
    """
    best, best_res = None, np.inf
    dg = np.abs(np.diag(M))
    d = np.where(dg > 0, 1.0 / np.where(dg > 0, dg, 1.0), 1.0)
    for cand in (polish_lcp(M, q, z), _scaled(polish_lcp(M * d[None, :], q, z / d), d)):
        if cand is not None:
            res = lcp_residual(M, q, cand)
            if res < best_res:
                best, best_res = cand, res
    return best


def _scaled(y: np.ndarray | None, d: np.ndarray) -> np.ndarray | None:
    return None if y is None else d * y


def solve_with_backend(
    M: Any, q: Any, backend: str, name: str, options: Options | None = None,
    progress: Reporter | None = None, **overrides: Any
) -> Result:
    """Solve LCP(q, M) through the MPCC Program with IPOPT on ``backend``; report as ``name``.

    ``time_limit`` goes to :func:`solve_program` (checked between NLPs; each NLP gets what is
    left as IPOPT's ``max_wall_time``). With it (or a ``progress`` reporter, see
    :mod:`contactmp.progress`) the answer of every NLP IPOPT solves is checked
    (``||min(z, M z + q)||_inf``, before and after the polish) and reported; when the time runs
    out the checked point of least residual is returned, status ``time_limit``.
    """
    t0 = time.perf_counter()
    M, q = validate_lcp(M, q)
    o = Options.build(options, **overrides)
    watch = watch_for(name, o.time_limit, progress, t0)
    prog, z = lcp_program(M, q)
    polished = {"used": False, "nlps": 0}

    def polish(x: np.ndarray) -> np.ndarray | None:
        cand = _polish(M, q, x)
        polished["nlps"] += 1
        if watch is not None:
            watch.offer(x, lcp_residual(M, q, x), polished["nlps"])
            if cand is not None:
                watch.offer(cand, lcp_residual(M, q, cand), polished["nlps"])
        if cand is not None and lcp_residual(M, q, cand) <= o.tol:
            polished["used"] = True
            return cand
        return None

    left = None if watch is None or not watch.limited else max(watch.left(), 1e-3)
    r = solve_program(
        prog, backend, o.strategy, accept=polish, comp_tol=o.tol, sigma_min=o.sigma_min, max_iter=o.max_iter,
        time_limit=left,
    )
    zs = r.value(z)
    if not r.success and (watch is None or not watch.expired()):
        # one more polish of whatever came back (a failed NLP can still be close to a solution;
        # an O(n^3) least squares, so not once the time is up)
        cand = _polish(M, q, zs)
        if cand is not None and lcp_residual(M, q, cand) < lcp_residual(M, q, zs):
            zs, polished["used"] = cand, True
    if r.status is Status.TIME_LIMIT and watch is not None and watch.x is not None:
        if watch.residual < lcp_residual(M, q, zs):  # the checked point of least residual
            zs = watch.x
    return verified_result(
        M, q, zs, solver=name, claimed=r.status, tol=o.tol, iterations=r.iterations, t_start=t0,
        message=r.message, backend_status=r.backend_status, strategy=o.strategy, polished=polished["used"],
        homotopy=r.extras["homotopy"],
    )


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) (find ``z >= 0`` with ``w = M z + q >= 0``, ``z^T w = 0``) with IPOPT via CasADi.

    Options: ``tol``, ``sigma_min``, ``max_iter`` (per NLP), ``strategy``, ``time_limit`` (see
    :class:`Options` and :func:`solve_with_backend`). Never raises on non-convergence; ``solved``
    only after the independent residual check.
    """
    return solve_with_backend(M, q, BACKEND, NAME, options, progress, **overrides)
