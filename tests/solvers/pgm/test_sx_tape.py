"""SX Functions as instruction tapes (solvers/pgm/sx_tape.py): the replay gives CasADi's values to the bit,
outputs are dense and column-major with structural zeros, unsupported graphs are refused by name."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.solvers.pgm.sx_tape import Tape


def _every_op() -> ca.Function:
    x, y = ca.SX.sym("x", 3), ca.SX.sym("y", 2)
    e = ca.vertcat(
        x[0] * y[0] + x[1] - x[2] / y[1], -x[0], x[1] ** 2, 2 * x[2], 1 / y[0], ca.sqrt(ca.fabs(x[0])),
        ca.sin(x[1]), ca.cos(x[2]), ca.tan(y[0]), ca.exp(y[1]), ca.log(ca.fabs(y[0]) + 1), ca.fmin(x[0], y[0]),
        ca.fmax(x[1], y[1]), x[0] ** y[1], x[1] ** 3.5, x[0] < y[0], x[1] <= y[1], x[2] == y[0], x[0] != y[1],
        ca.logic_not(x[0] < 0), ca.if_else(x[0] > 0, x[1], 0.0), ca.atan2(x[0], y[0]))
    M = ca.SX(3, 2)
    M[0, 0], M[2, 1] = x[0] * y[1], ca.sin(y[0])  # a sparse matrix output
    return ca.Function("every", [x, y], [e, M])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tape_equals_casadi_bitwise(seed):
    f = _every_op()
    tape = Tape.from_function(f)
    rng = np.random.default_rng(seed)
    x, y = np.abs(rng.normal(size=3)) + 0.1, rng.normal(size=2)
    got = tape(x, y)
    ref = [f(x, y)[k].full() for k in range(2)]
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_array_equal(g, r)  # the same operations: the same bits (NaN where CasADi's)


def test_sparse_output_is_dense_column_major():
    tape = Tape.from_function(_every_op())
    M = tape(np.ones(3), np.array([0.5, 2.0]))[1]
    assert M.shape == (3, 2) and M[1, 0] == 0.0 and M[0, 1] == 0.0 and M[0, 0] == 2.0


def test_unsupported_graphs_are_refused():
    x = ca.MX.sym("x", 2)
    with pytest.raises(UnsupportedProgramError, match="not an SX Function"):
        Tape.from_function(ca.Function("m", [x], [ca.sin(x)]))
    s = ca.SX.sym("s")
    with pytest.raises(UnsupportedProgramError, match="erf"):
        Tape.from_function(ca.Function("e", [s], [ca.erf(s)]))
    with pytest.raises(InputError, match="f"):
        Tape.from_function("not a function")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="args"):
        Tape.from_function(_every_op())(np.ones(2))
