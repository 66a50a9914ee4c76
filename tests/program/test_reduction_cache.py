"""A reduction's symbolic part is kept on the Program; the numbers follow the parameters' values,
and a change of the structure or of the variable bounds builds it again."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import UnsupportedProgramError
from contactmp.program import Program


def _lcp_program():
    prog = Program("p")
    k = prog.add_parameters("k", 1, 2.0)
    z = prog.add_variables("z", 2, lb=0.0)
    prog.add_complementarity(z.sym, k.sym * z.sym + np.array([-1.0, 1.0]))
    return prog, k, z


def test_lcp_numbers_follow_the_parameters():
    prog, k, _ = _lcp_program()
    first = prog.to_lcp()
    np.testing.assert_array_equal(first.M, 2.0 * np.eye(2))
    k.value = 5.0
    second = prog.to_lcp()
    np.testing.assert_array_equal(second.M, 5.0 * np.eye(2))
    np.testing.assert_array_equal(second.q, [-1.0, 1.0])
    np.testing.assert_array_equal(first.M, 2.0 * np.eye(2))  # an earlier reduction keeps its numbers


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.M, b.M)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.basis, b.basis)


def test_new_bounds_and_new_rows_rebuild_the_structure():
    prog, _, z = _lcp_program()
    prog.to_lcp()
    z.lb = np.array([-np.inf, 0.0])
    fresh, _, z2 = _lcp_program()
    z2.lb = np.array([-np.inf, 0.0])
    _same(prog.to_lcp(), fresh.to_lcp())  # as a program that never had the old bounds
    assert prog.to_lcp().free.size == 1
    for p in (prog, fresh):
        y = p.add_variables("y", 1)
        p.add_constraint(y.sym - p["z"].sym[1], 0.0, 0.0)
    _same(prog.to_lcp(), fresh.to_lcp())
    assert prog.to_lcp().free.size == 2  # y is eliminated too: the structure was rebuilt


def test_a_refusal_is_kept_and_raised_again():
    prog = Program("p")
    z = prog.add_variables("z", 1, lb=0.0)
    prog.add_complementarity(z.sym, z.sym ** 2 + 1.0)
    for _ in range(2):
        with pytest.raises(UnsupportedProgramError, match="not affine"):
            prog.to_lcp()
