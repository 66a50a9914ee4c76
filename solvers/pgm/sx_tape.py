"""CasADi SX Functions evaluated inside numba code: the Function's own instruction list as arrays.

An SX :class:`casadi.Function` is a straight-line algorithm: instructions ``work[r] = op(work[a],
work[b])`` in CasADi's topological order, with constants, input reads and output writes
(``Function.instruction_id / instruction_input / instruction_output / instruction_constant``; the
same reading as :func:`contactmp.pyomo_bridge.translate`). :class:`Tape` stores it as four integer
columns ``(op, a, b, r)`` and the constants, with every input read turned into an index of ONE
flat argument vector ``x`` (the Function's inputs concatenated, each dense) and every output write
into an index of ONE flat dense result vector ``y`` (the outputs concatenated, each dense,
column-major; structural zeros stay 0). :func:`tape_eval` replays it in numba, operation by
operation with the IEEE operations CasADi's virtual machine uses (``sq`` is ``x*x``, ``twice``
``x+x``, ``inv`` ``1/x``), so the values are CasADi's own; compiled code (the NMDP's projected
gradient kernel, :mod:`contactmp.solvers.pgm._kernels`) calls it without the Python round trip
of ``Function.__call__``.

Only the operations listed in :data:`SUPPORTED` are taken; a Function using any other (or an MX
Function, or one calling other Functions) raises :class:`~contactmp.errors.UnsupportedProgramError`
naming the operation when the tape is built.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import casadi as ca
import numba
import numpy as np

from contactmp.errors import InputError, UnsupportedProgramError

__all__ = ["Tape", "tape_eval", "SUPPORTED"]

# operation codes (CasADi's) as module constants: numba folds them into the compiled switch
_ADD, _SUB, _MUL, _DIV, _NEG = ca.OP_ADD, ca.OP_SUB, ca.OP_MUL, ca.OP_DIV, ca.OP_NEG
_SQ, _TWICE, _INV, _SQRT = ca.OP_SQ, ca.OP_TWICE, ca.OP_INV, ca.OP_SQRT
_SIN, _COS, _TAN, _EXP, _LOG = ca.OP_SIN, ca.OP_COS, ca.OP_TAN, ca.OP_EXP, ca.OP_LOG
_FMIN, _FMAX, _FABS, _POW, _CONSTPOW = ca.OP_FMIN, ca.OP_FMAX, ca.OP_FABS, ca.OP_POW, ca.OP_CONSTPOW
_LT, _LE, _EQ, _NE, _NOT, _IF_ELSE_ZERO = ca.OP_LT, ca.OP_LE, ca.OP_EQ, ca.OP_NE, ca.OP_NOT, ca.OP_IF_ELSE_ZERO
_ATAN2, _ASSIGN = ca.OP_ATAN2, ca.OP_ASSIGN
_CONST, _INPUT, _OUTPUT = ca.OP_CONST, ca.OP_INPUT, ca.OP_OUTPUT

#: the CasADi operations a tape can hold
SUPPORTED = frozenset({_ADD, _SUB, _MUL, _DIV, _NEG, _SQ, _TWICE, _INV, _SQRT, _SIN, _COS, _TAN, _EXP, _LOG,
                       _FMIN, _FMAX, _FABS, _POW, _CONSTPOW, _LT, _LE, _EQ, _NE, _NOT, _IF_ELSE_ZERO, _ATAN2,
                       _ASSIGN, _CONST, _INPUT, _OUTPUT})


@dataclass(frozen=True)
class Tape:
    """One SX Function as arrays (module docstring): ``code`` ``(n_instr, 3)`` int64 rows
    ``(a, b, r)`` -- ``work[r] = op(work[a], work[b])``, an input read ``work[r] = x[a]``, an output
    write ``y[r] = work[a]`` -- grouped in ``runs`` ``(n_runs, 3)`` rows ``(op, start, end)`` of
    one operation each, ``consts`` (the constant of each ``const`` row), ``n_work`` (work
    registers), ``n_x`` (flat argument length), ``n_y`` (flat result length), and the offsets
    ``x_offsets`` / ``y_offsets`` and shapes ``y_shapes`` of the inputs and outputs in them."""

    name: str
    code: np.ndarray
    consts: np.ndarray
    runs: np.ndarray
    n_work: int
    n_x: int
    n_y: int
    x_offsets: tuple[int, ...]
    y_offsets: tuple[int, ...]
    y_shapes: tuple[tuple[int, int], ...]

    @classmethod
    def from_function(cls, f: ca.Function) -> "Tape":
        """The tape of the SX Function ``f`` (every input and output dense in the flat vectors).

        The instructions are rescheduled without changing any operation or operand: each result
        gets its own register (CasADi reuses registers), every instruction its level (one more
        than its operands' deepest; inputs and constants 0, output writes last), and the
        instructions are ordered by level, then operation, so that :func:`tape_eval` runs long
        stretches of one operation (no per-instruction dispatch: a third of the time of CasADi's
        virtual machine on the NMDP's Jacobians)."""
        if not isinstance(f, ca.Function):
            raise InputError("f", f"must be a casadi.Function, got {type(f).__name__}")
        if not f.is_a("SXFunction"):
            raise UnsupportedProgramError(f"Function {f.name()!r} is not an SX Function (expand it first)")
        x_off = np.cumsum([0] + [f.numel_in(i) for i in range(f.n_in())])
        y_off = np.cumsum([0] + [f.numel_out(i) for i in range(f.n_out())])
        in_nz = [np.asarray(f.sparsity_in(i).find(), dtype=np.int64) for i in range(f.n_in())]
        out_nz = [np.asarray(f.sparsity_out(i).find(), dtype=np.int64) for i in range(f.n_out())]
        n = f.n_instructions()
        ops = np.zeros(n, dtype=np.int64)
        code = np.zeros((n, 3), dtype=np.int64)
        consts = np.zeros(n)
        level = np.zeros(n, dtype=np.int64)
        slot = np.zeros(max(int(f.sz_w()), 1), dtype=np.int64)  # CasADi register -> the instruction that wrote it
        for k in range(n):
            op = f.instruction_id(k)
            if op not in SUPPORTED:
                from contactmp.pyomo_bridge import op_name

                raise UnsupportedProgramError(f"Function {f.name()!r}: CasADi operation '{op_name(op)}' has no "
                                              "tape form in contactmp.solvers.pgm.sx_tape")
            ops[k] = op
            i, o = f.instruction_input(k), f.instruction_output(k)
            if op == _INPUT:  # i = (input, nonzero): read x[...] into a new register
                code[k] = (x_off[i[0]] + in_nz[i[0]][i[1]], 0, k)
            elif op == _OUTPUT:  # o = (output, nonzero): write the operand to y[...]
                a = slot[i[0]]
                code[k] = (a, a, y_off[o[0]] + out_nz[o[0]][o[1]])
                level[k] = n + 1
                continue
            elif op == _CONST:
                code[k] = (0, 0, k)
                consts[k] = float(f.instruction_constant(k))
            else:
                a = slot[i[0]]
                b = slot[i[1]] if len(i) > 1 else a
                code[k] = (a, b, k)
                level[k] = max(level[a], level[b]) + 1
            slot[o[0]] = k
        order = np.lexsort((np.arange(n), ops, level))
        code, consts, ops = code[order], consts[order], ops[order]
        cut = np.flatnonzero(np.diff(ops) != 0) + 1 if n else np.zeros(0, dtype=np.int64)
        starts = np.concatenate([[0], cut]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        ends = np.concatenate([cut, [n]]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        runs = np.column_stack([ops[starts], starts, ends]).astype(np.int64) if n else np.zeros((0, 3), np.int64)
        return cls(f.name(), np.ascontiguousarray(code), consts, np.ascontiguousarray(runs), max(n, 1),
                   int(x_off[-1]), int(y_off[-1]), tuple(int(v) for v in x_off[:-1]),
                   tuple(int(v) for v in y_off[:-1]), tuple((f.size1_out(i), f.size2_out(i)) for i in range(f.n_out())))

    def work(self) -> np.ndarray:
        """A work vector for :func:`tape_eval` (``n_work`` entries)."""
        return np.zeros(max(self.n_work, 1))

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        """Evaluate (from Python; tests): the inputs as arrays, the outputs as dense arrays."""
        x = np.concatenate([np.asarray(a, dtype=float).ravel(order="F") for a in args]) if args else np.zeros(0)
        if x.size != self.n_x:
            raise InputError("args", f"tape {self.name!r} takes {self.n_x} numbers in all, got {x.size}")
        y = np.zeros(self.n_y)
        tape_eval(self.code, self.consts, self.runs, self.work(), x, y)
        return [y[o:o + r * c].reshape((r, c), order="F") for o, (r, c) in zip(self.y_offsets, self.y_shapes)]


@numba.njit(cache=True)
def tape_eval(code: np.ndarray, consts: np.ndarray, runs: np.ndarray, work: np.ndarray, x: np.ndarray,
              y: np.ndarray) -> None:  # pragma: no cover (compiled)
    """Replay the tape ``(code, consts, runs)`` on the flat arguments ``x`` into the flat results
    ``y`` (which must hold zeros where the outputs have structural zeros; entries written are
    overwritten), one run of a single operation at a time."""
    for q in range(runs.shape[0]):
        op = runs[q, 0]
        s = runs[q, 1]
        e = runs[q, 2]
        if op == _MUL:
            for k in range(s, e):
                work[code[k, 2]] = work[code[k, 0]] * work[code[k, 1]]
        elif op == _ADD:
            for k in range(s, e):
                work[code[k, 2]] = work[code[k, 0]] + work[code[k, 1]]
        elif op == _SUB:
            for k in range(s, e):
                work[code[k, 2]] = work[code[k, 0]] - work[code[k, 1]]
        elif op == _CONST:
            for k in range(s, e):
                work[code[k, 2]] = consts[k]
        elif op == _INPUT:
            for k in range(s, e):
                work[code[k, 2]] = x[code[k, 0]]
        elif op == _OUTPUT:
            for k in range(s, e):
                y[code[k, 2]] = work[code[k, 0]]
        else:
            for k in range(s, e):
                _unusual(op, code[k, 0], code[k, 1], code[k, 2], work)


@numba.njit(cache=True, inline="always")
def _unusual(op: int, a: int, b: int, r: int, work: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``work[r] = op(work[a], work[b])`` for every operation but the six common ones."""
    if op == _NEG:
        work[r] = -work[a]
    elif op == _SQ:
        work[r] = work[a] * work[a]
    elif op == _TWICE:
        work[r] = work[a] + work[a]
    elif op == _DIV:
        work[r] = work[a] / work[b]
    elif op == _INV:
        work[r] = 1.0 / work[a]
    elif op == _SIN:
        work[r] = math.sin(work[a])
    elif op == _COS:
        work[r] = math.cos(work[a])
    elif op == _FMIN:
        work[r] = min(work[a], work[b]) if not (math.isnan(work[a]) or math.isnan(work[b])) else (
            work[b] if math.isnan(work[a]) else work[a])
    elif op == _FMAX:
        work[r] = max(work[a], work[b]) if not (math.isnan(work[a]) or math.isnan(work[b])) else (
            work[b] if math.isnan(work[a]) else work[a])
    elif op == _LE:
        work[r] = 1.0 if work[a] <= work[b] else 0.0
    elif op == _LT:
        work[r] = 1.0 if work[a] < work[b] else 0.0
    elif op == _EQ:
        work[r] = 1.0 if work[a] == work[b] else 0.0
    elif op == _NE:
        work[r] = 1.0 if work[a] != work[b] else 0.0
    elif op == _NOT:
        work[r] = 1.0 if work[a] == 0.0 else 0.0
    elif op == _IF_ELSE_ZERO:
        work[r] = work[b] if work[a] != 0.0 else 0.0
    elif op == _SQRT:
        work[r] = math.sqrt(work[a]) if work[a] >= 0.0 else math.nan
    elif op == _FABS:
        work[r] = abs(work[a])
    elif op == _EXP:
        work[r] = math.exp(work[a])
    elif op == _LOG:
        work[r] = math.log(work[a]) if work[a] > 0.0 else (-math.inf if work[a] == 0.0 else math.nan)
    elif op == _TAN:
        work[r] = math.tan(work[a])
    elif op == _POW or op == _CONSTPOW:
        work[r] = work[a] ** work[b]
    elif op == _ATAN2:
        work[r] = math.atan2(work[a], work[b])
    elif op == _ASSIGN:
        work[r] = work[a]
