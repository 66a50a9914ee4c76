"""Plug-ins by entry point: a package installed into a folder on ``sys.path`` (its code and its
``.dist-info`` with ``entry_points.txt``, the layout an installer writes) lists a formulation and
an LCP solver under contactmp's groups; they then run through TimeStepping, ContactImplicitTO,
the front door and ``solve_lcp`` by name, with no project file changed. A name that is registered
already (a built-in included) raises unless the caller passes ``replace=True``."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from contactmp import plugins
from contactmp.errors import InputError
from contactmp.formulations import base
from contactmp.models.systems import point_mass_2d
from contactmp.result import Status
from contactmp.solvers import registry

FORMULATION = '''
from dataclasses import dataclass

from contactmp.formulations.velocity_pyramid import Pyramid


class SixFacets(Pyramid):
    """The velocity pyramid with six facets by default (a formulation of its own name)."""

    name = "tiny-six-facets"

    @dataclass(frozen=True)
    class Options(Pyramid.Options):
        facets: int = 6
'''

LCP_SOLVER = '''
"""LCP(q, M) by enumerating the complementary bases (n <= 12)."""
import itertools
import time
from dataclasses import dataclass

import numpy as np

from contactmp.result import Status
from contactmp.solvers.lcp import validate_lcp, verified_result
from contactmp.solvers.options import SolverOptions

NAME = "tiny-enumeration"


@dataclass
class Options(SolverOptions):
    pass


def solve(M, q, options=None, progress=None, **overrides):
    o = Options.build(options, **overrides)
    t0 = time.perf_counter()
    M, q = validate_lcp(M, q)
    n = q.size
    for k in range(n + 1):
        for basis in itertools.combinations(range(n), k):
            z = np.zeros(n)
            b = list(basis)
            if b:
                try:
                    z[b] = np.linalg.solve(M[np.ix_(b, b)], -q[b])
                except np.linalg.LinAlgError:
                    continue
            if z.min() >= -o.tol and (M @ z + q).min() >= -o.tol:
                return verified_result(M, q, np.maximum(z, 0.0), solver=NAME, claimed=Status.SOLVED, tol=o.tol,
                                       iterations=k, t_start=t0, message="complementary basis found", extras={})
    return verified_result(M, q, None, solver=NAME, claimed=Status.NOT_SOLVED, tol=o.tol, iterations=n,
                           t_start=t0, message="no complementary basis", extras={})
'''


def _install(site: Path, entry_points: str) -> None:
    """Write the package ``tiny_contactmp_plugin`` and its metadata into the folder ``site``."""
    pkg = site / "tiny_contactmp_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "formulation.py").write_text(FORMULATION)
    (pkg / "enumeration.py").write_text(LCP_SOLVER)
    info = site / "tiny_contactmp_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-contactmp-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    (info / "RECORD").write_text("")


@pytest.fixture
def fresh_registries(monkeypatch):
    """The registries as a fresh process has them (built-ins only, plug-ins not loaded yet),
    restored after the test."""
    base._load_builtin()
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(plugins, "LOADED_GROUPS", set())
    monkeypatch.setattr(registry, "LCP_SOLVERS", dict(registry.LCP_SOLVERS))
    monkeypatch.setattr(registry, "_LOADED", dict(registry._LOADED))


def test_an_installed_package_plugs_in_a_formulation_and_an_lcp_solver(tmp_path, monkeypatch, fresh_registries):
    _install(tmp_path / "site", """
        [contactmp.formulations]
        tiny-six-facets = tiny_contactmp_plugin.formulation:SixFacets

        [contactmp.lcp_solvers]
        tiny-enumeration = tiny_contactmp_plugin.enumeration
        """)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    from contactmp.formulations.base import formulation, registered
    from contactmp.solvers import solve_lcp
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO
    from contactmp.transcriptions.time_stepping import TimeStepping

    assert "tiny-six-facets" in registered()
    assert formulation("tiny-six-facets").options.facets == 6
    # the solver by name: the same (unique, M positive definite) solution as Lemke's
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    M, q = A @ A.T + np.eye(6), rng.standard_normal(6)
    mine, ref = solve_lcp(M, q, solver="tiny-enumeration"), solve_lcp(M, q, solver="lemke")
    assert mine.status is Status.SOLVED and mine.solver == "tiny-enumeration"
    np.testing.assert_allclose(mine.x, ref.x, atol=1e-10)
    # a sliding point mass under the plug-in formulation, each step's LCP by the plug-in solver:
    # Coulomb friction decelerates it at mu g (mu 0.5), it stays on the ground
    system = point_mass_2d(m=1.0, mu=0.5)
    h, n = 0.01, 20
    traj = TimeStepping(system, h, "tiny-six-facets", solver="tiny-enumeration").simulate([0.0, 0.0], [1.0, 0.0],
                                                                                         None, n)
    assert traj.n_failed == 0 and set(traj.solver) == {"tiny-enumeration"}
    np.testing.assert_allclose(traj.v[:, 0], 1.0 - 0.5 * 9.81 * h * np.arange(n + 1), atol=1e-9)
    assert np.abs(traj.q[:, 1]).max() <= 1e-12
    # a contact-implicit plan under the plug-in formulation
    to = ContactImplicitTO(system, 10, 0.1, "tiny-six-facets")
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.3, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort()
    plan = to.solve()
    assert plan.status is Status.SOLVED and plan.comp_violation <= 1e-8
    np.testing.assert_allclose(plan.q[-1], [0.3, 0.0], atol=1e-8)


def test_an_entry_point_may_not_take_a_registered_name(tmp_path, monkeypatch, fresh_registries):
    _install(tmp_path / "site", """
        [contactmp.lcp_solvers]
        lemke = tiny_contactmp_plugin.enumeration
        """)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(InputError, match="'lemke' is registered already") as exc:
        registry.lcp_solver("no-such-solver")  # an unknown name loads the plug-ins
    assert exc.value.field == "name"


def test_register_raises_on_a_registered_name_unless_replace(fresh_registries):
    from contactmp.formulations.velocity_pyramid import Pyramid

    class Other(Pyramid):
        name = "cone"

    with pytest.raises(InputError, match="'cone' is registered already") as exc:
        base.register(Other)
    assert exc.value.field == "cls"
    assert base.register(replace=True)(Other) is Other and base.formulation("cone").__class__ is Other
    from contactmp.solvers.lcp import pgs

    with pytest.raises(InputError, match="registered already"):
        registry.register_lcp_solver("newton", pgs)
    registry.register_lcp_solver("newton", pgs, replace=True)
    assert registry.lcp_solver("newton") is pgs.solve
    with pytest.raises(InputError, match="needs NAME, Options and solve"):
        registry.register_lcp_solver("mine", sys.modules[__name__], replace=True)
