"""Nonlinear programs and MPCCs through IPOPT: a :class:`~contactmp.program.Program` ``min f s.t.
bounds, lbg <= g <= ubg, 0 <= a _|_ b >= 0`` solved by an MPCC homotopy.

The face of the NLP/MPCC solvers. :mod:`.solve` holds :func:`solve_program` and its options
(:class:`NLPOptions`); :mod:`.mpcc` the MPCC strategies and the relaxed programs they build;
:mod:`.homotopy` the homotopy loop over those NLPs; :mod:`.stationarity` the B-stationarity
certificate (an LPEC through HiGHS) and the walk along its descent branches; :mod:`.refine`
Newton's method on the active pieces; :mod:`.kkt` the sensitivities of a solution's KKT system;
:mod:`.nosbench` the NOSBENCH runner; :mod:`.pyomo_ipopt` the Pyomo plugin ``contactmp_ipopt``
(loads Pyomo: imported on first use).
"""
from __future__ import annotations

from typing import Any

from contactmp.solvers.nlp.kkt import KKTSensitivity, kkt_sensitivity
from contactmp.solvers.nlp.mpcc import CONE_BOUND, MPCC_STRATEGIES, PORTFOLIO, relax, relaxation, valid_cone_bound
from contactmp.solvers.nlp.nosbench import solve_nosbench
from contactmp.solvers.nlp.refine import Refinement, refine_on_pieces
from contactmp.solvers.nlp.solve import (
    DERIVATIVES,
    STEP_START,
    STRATEGIES,
    WARM_START,
    NLPOptions,
    solve_program,
    walk_branches,
    warm_start_changes,
)
from contactmp.solvers.nlp.stationarity import BStationarity, BVerdict, b_stationarity, b_stationary_point

#: names of :mod:`.pyomo_ipopt` this face gives (it imports Pyomo: loaded on first use)
PYOMO = ("CasadiIpopt", "PyomoProgram", "pyomo_to_program")

__all__ = ["KKTSensitivity", "kkt_sensitivity", "CONE_BOUND", "MPCC_STRATEGIES", "PORTFOLIO", "relax", "relaxation",
           "valid_cone_bound", "solve_nosbench", "Refinement", "refine_on_pieces", "DERIVATIVES", "STEP_START",
           "STRATEGIES", "WARM_START", "NLPOptions", "solve_program", "walk_branches", "warm_start_changes",
           "BStationarity", "BVerdict", "b_stationarity", "b_stationary_point", *PYOMO]


def __getattr__(name: str) -> Any:
    """The Pyomo plugin's names, imported on first use."""
    if name in PYOMO:
        from contactmp.solvers.nlp import pyomo_ipopt

        return getattr(pyomo_ipopt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
