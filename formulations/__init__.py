"""contactmp.formulations: one instant or one time step of contact as a program block.

* :class:`PyramidLCP` -- the pyramid LCP (35)-(39) of Trinkle, Pang, Sudarsky and Lo (and its
  k-facet generalization), with the map back to forces, accelerations and contact modes and a check
  of the original conditions;
* :func:`add_velocity_pyramid_step` -- the same friction law at the velocity level, one time step as
  a :class:`~contactmp.program.Program` block for transcriptions to stack.
"""
from contactmp.formulations.pyramid_lcp import PyramidLCP, PyramidSolution, facet_generators, facet_normals
from contactmp.formulations.velocity_pyramid import (
    VelocityPyramidStep,
    add_velocity_pyramid_step,
    pyramid_generators,
)

__all__ = [
    "PyramidLCP", "PyramidSolution", "VelocityPyramidStep", "add_velocity_pyramid_step",
    "facet_generators", "facet_normals", "pyramid_generators",
]
