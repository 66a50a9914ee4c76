"""contactmp.formulations: one instant or one time step of contact as a program block.

Every time-step formulation follows one protocol and sits in one registry
(:mod:`contactmp.formulations.base`: :class:`Formulation`, :class:`Step`, :class:`StepBlock`,
:func:`register`, :func:`formulation`, :data:`FORMULATIONS`): ``"pyramid"`` (:class:`Pyramid`),
``"cone"`` (:class:`Cone`), ``"compliant"`` (:class:`Compliant`), ``"nmdp"``
(:class:`NMDPFormulation`) and ``"mdp"`` (:class:`MDPFormulation`). The building blocks:

* :class:`PyramidLCP` -- the pyramid LCP (35)-(39) of Trinkle, Pang, Sudarsky and Lo (and its
  k-facet generalization), with the map back to forces, accelerations and contact modes and a check
  of the original conditions;
* :func:`add_velocity_pyramid_step` -- the same friction law at the velocity level, one time step as
  a :class:`~contactmp.program.Program` block for transcriptions to stack;
* :class:`ConeNCP` -- the instantaneous problem with Coulomb's quadratic cone (29)-(34) / (42) as a
  smooth complementarity Program block (and as fc3d when no contact slides), with the map back to
  physics and its check; :func:`add_fc3d_block` -- the velocity-level cone problem fc3d(W, q, mu)
  as a Program block; :func:`add_velocity_cone_step` -- one velocity-level time step with Coulomb's
  disk (the cone counterpart of :func:`add_velocity_pyramid_step`);
* :class:`CompliantQP` -- Drumwright's compliant constraint step (bilateral: one linear solve;
  unilateral: a strictly convex QP / symmetric positive-definite LCP; solved in
  :mod:`contactmp.solvers.cone_qp.compliant`);
  :class:`CompliantFriction` -- its frictional contact on the true Coulomb cone (a convex SOC QP);
  :func:`add_velocity_compliant_step` -- the compliant step as a velocity-level Program block;
* :class:`NMDP` -- the nonconvex maximal-dissipation step of Pan and Hauser (backward Euler, wrench
  polytopes; IPOPT here, the projected gradient method in :mod:`contactmp.solvers.pgm.projected_gradient`) and
  :func:`add_nmdp_step` (its KKT conditions as a Program block); :class:`LinearizedMDP` -- the
  linearized MDP QP baseline and :func:`add_linearized_mdp_step`.
"""
from contactmp.formulations.base import (
    FORMULATIONS,
    Formulation,
    Step,
    StepBlock,
    StepOutcome,
    formulation,
    register,
    registered,
)
from contactmp.formulations.compliant_friction import CompliantFriction, compliant_friction_step
from contactmp.formulations.compliant_qp import CompliantQP, compliant_step
from contactmp.formulations.linearized_mdp import LinearizedMDP, MDPFormulation, add_linearized_mdp_step
from contactmp.formulations.nmdp import NMDP, NMDPFormulation, NMDPFunctions, add_nmdp_step
from contactmp.formulations.velocity_compliant import Compliant, add_velocity_compliant_step
from contactmp.formulations.cone_ncp import ConeNCP, ConeSolution, FC3DBlock, add_fc3d_block
from contactmp.formulations.pyramid_lcp import PyramidLCP, PyramidSolution, facet_generators, facet_normals
from contactmp.formulations.velocity_cone import Cone, VelocityConeStep, add_velocity_cone_step
from contactmp.formulations.step_rows import GAPS, check_gap, dynamics_row, matrix, normal_side, numeric_mu, step_inputs
from contactmp.formulations.velocity_pyramid import (
    Pyramid,
    VelocityPyramidStep,
    add_velocity_pyramid_step,
    pyramid_generators,
)

__all__ = [
    "FORMULATIONS", "Formulation", "Step", "StepBlock", "StepOutcome", "formulation", "register", "registered",
    "Pyramid", "Cone", "Compliant", "NMDPFormulation", "MDPFormulation",
    "ConeNCP", "ConeSolution", "FC3DBlock", "add_fc3d_block",
    "PyramidLCP", "PyramidSolution", "VelocityPyramidStep", "add_velocity_pyramid_step",
    "facet_generators", "facet_normals", "pyramid_generators", "VelocityConeStep", "add_velocity_cone_step",
    "CompliantQP", "compliant_step",
    "GAPS", "check_gap", "dynamics_row", "matrix", "normal_side", "numeric_mu", "step_inputs",
    "CompliantFriction", "compliant_friction_step", "add_velocity_compliant_step",
    "NMDP", "NMDPFunctions", "add_nmdp_step", "LinearizedMDP", "add_linearized_mdp_step",
]
