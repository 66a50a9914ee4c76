"""NOSBENCH MPCCs (Nurkanovic, Pozharskiy, Diehl 2024) read into a :class:`~contactmp.program.Program`.

A NOSBENCH problem (CasADi JSON) is::

    minimize    f(w, p)
    subject to  lbw <= w <= ubw,   lbg <= g(w, p) <= ubg,
                0 <= G(w, p)  _|_  H(w, p) >= 0

where the signs of ``G`` and ``H`` come only from the variable bounds (some families pair
sign-indefinite expressions), so ``G >= 0``, ``H >= 0`` are never added. The paper's criterion:
bounds and ``g`` feasible to 1e-6 (absolute) and the signed residual ``max_i G_i H_i <= 1e-7``.

Security: the functions are serialized CasADi Functions, and CasADi can deserialize functions that
load shared libraries (``external``) while deserializing. So the serialized text is decoded and
scanned *before* deserialization (no ``External`` / library importer / ``Callback`` class in it),
and the deserialized Function must be an ``SXFunction`` or ``MXFunction`` whose every call node
calls again only such functions (SX call nodes are refused). Anything else is an
:class:`InputError` naming the field. Nothing is ever unpickled.

Size: a file is parsed only when it is at most ``cap // JSON_EXPANSION`` bytes (128 MiB with the
default cap of :data:`contactmp.io.MAX_PROBLEM_BYTES`; the cap is overridden by
``$CONTACTMP_MAX_BYTES`` or the ``max_bytes=`` keyword of :func:`load_nosbench`), checked before
the file is read: parsed JSON takes up to :data:`~contactmp.io.JSON_EXPANSION` times its text.

CasADi and the Program are imported when a file is loaded, not with this module, so
:func:`is_nosbench_file` costs nothing. Solving a file (the paper's protocol) is
:func:`contactmp.solvers.nlp.nosbench.solve_nosbench`.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contactmp.errors import InputError

if TYPE_CHECKING:  # imported where used: CasADi costs about 0.3 s
    import casadi as ca

    from contactmp.program import Complementarity, Constraint, Parameters, Program, Variables

__all__ = [
    "NosbenchProblem",
    "load_nosbench",
    "to_program",
    "nosbench_residuals",
    "meets_paper_criterion",
    "is_nosbench_file",
    "FEAS_TOL",
    "COMP_TOL",
    "NOSBENCH_ENV",
    "NOSBENCH_FETCH",
]

#: the environment variable naming the folder that contains the NOSBENCH subsets ``nosbench/``,
#: ``nosbench-more/``, ``nosbench-wide/`` (read by the tests and the benchmarks; NOSBENCH states no
#: licence, so it is not in the repository)
NOSBENCH_ENV = "CONTACTMP_NOSBENCH"
#: the command that writes that folder (``tools/fetch_nosbench.py`` of the repository)
NOSBENCH_FETCH = "python tools/fetch_nosbench.py DEST"

#: the paper's feasibility tolerance (bounds and g, absolute)
FEAS_TOL = 1e-6
#: the paper's complementarity tolerance on max_i G_i H_i
COMP_TOL = 1e-7

_ALLOWED_CLASSES = ("SXFunction", "MXFunction")
# class names in a serialized stream that mean "loads code" (shared library, compiler, Python)
_FORBIDDEN_TOKENS = (b"External", b"DllLibrary", b"Importer", b"Callback", b"ShellCompiler", b"Clang")


@dataclass
class NosbenchProblem:
    """One NOSBENCH MPCC: numeric data and the four checked CasADi Functions of ``(w, p)``."""

    name: str
    w0: np.ndarray
    lbw: np.ndarray
    ubw: np.ndarray
    p0: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    g_fun: ca.Function
    G_fun: ca.Function
    H_fun: ca.Function
    objective_fun: ca.Function

    @property
    def n_w(self) -> int:
        """Number of variables ``w``."""
        return int(self.w0.shape[0])

    @property
    def n_p(self) -> int:
        """Number of parameters ``p``."""
        return int(self.p0.shape[0])

    @property
    def n_g(self) -> int:
        """Number of constraint rows ``g``."""
        return int(self.lbg.shape[0])

    @property
    def n_comp(self) -> int:
        """Number of complementarity pairs ``(G_i, H_i)``."""
        return int(self.G_fun.size1_out(0))


# -- Reading and checking ----------------------------------------------------------------------
def _decode(text: str, fieldname: str) -> bytes:
    """The bytes of CasADi's serialized text (two letters 'a'..'p' per byte, low nibble first)."""
    if not isinstance(text, str) or not text:
        raise InputError(fieldname, "must be a non-empty string holding a serialized CasADi object")
    raw = text.encode("ascii") if text.isascii() else b"-"
    if len(raw) % 2 or raw.translate(None, b"abcdefghijklmnop"):
        raise InputError(fieldname, "is not CasADi serialized text (letters a..p, even length)")
    lo = np.frombuffer(raw[0::2], dtype=np.uint8) - 97
    hi = np.frombuffer(raw[1::2], dtype=np.uint8) - 97
    return (hi * 16 + lo).astype(np.uint8).tobytes()


def _prescan(text: str, fieldname: str) -> None:
    """Refuse serialized text naming a class that loads code, before CasADi deserializes it."""
    data = _decode(text, fieldname)
    for tok in _FORBIDDEN_TOKENS:
        if tok in data:
            raise InputError(fieldname, f"holds a CasADi '{tok.decode()}' node (code loaded from outside "
                             "the file); only plain SX or MX graphs are accepted")


def _check_graph(f: ca.Function, fieldname: str, depth: int = 0) -> None:
    """Accept only SXFunction / MXFunction graphs whose call nodes call such functions again."""
    import casadi as ca

    cls = f.class_name()
    if cls not in _ALLOWED_CLASSES:
        raise InputError(fieldname, f"is a CasADi '{cls}' function; only plain SX or MX graphs "
                         f"({', '.join(_ALLOWED_CLASSES)}) are accepted")
    if depth > 20:
        raise InputError(fieldname, "nests function calls more than 20 deep")
    for k in range(f.n_instructions()):
        if f.instruction_id(k) != ca.OP_CALL:
            continue
        if cls == "SXFunction":
            raise InputError(fieldname, "holds an SX call node (a call to another function); only plain graphs are accepted")
        _check_graph(f.instruction_MX(k).which_function(), fieldname, depth + 1)


def _load_function(d: dict[str, Any], fieldname: str, n_w: int, n_p: int, n_out: int | None) -> ca.Function:
    import casadi as ca

    if fieldname not in d:
        raise InputError(fieldname, "is missing")
    text = d[fieldname]
    _prescan(text, fieldname)
    try:
        f = ca.Function.deserialize(text)
    except RuntimeError as exc:
        raise InputError(fieldname, f"cannot be deserialized as a CasADi Function ({str(exc).splitlines()[-1]})") from None
    _check_graph(f, fieldname)
    if f.n_in() != 2 or f.n_out() != 1:
        raise InputError(fieldname, f"must be a function of (w, p) with one output, got {f.n_in()} inputs, {f.n_out()} outputs")
    for i, (name, n) in enumerate((("w", n_w), ("p", n_p))):
        if f.numel_in(i) != n:
            raise InputError(fieldname, f"input {i} ({name}) has {f.numel_in(i)} elements, expected {n}")
    if f.size2_out(0) not in (0, 1):
        raise InputError(fieldname, f"output must be a column, got shape {f.size_out(0)}")
    if n_out is not None and f.numel_out(0) != n_out:
        raise InputError(fieldname, f"output has {f.numel_out(0)} elements, expected {n_out}")
    return f


def _vector(d: dict[str, Any], fieldname: str, *, allow: str) -> np.ndarray:
    if fieldname not in d:
        raise InputError(fieldname, "is missing")
    try:
        arr = np.asarray(d[fieldname], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise InputError(fieldname, "must be a list of numbers") from None
    if arr.ndim != 1:
        raise InputError(fieldname, f"must be a flat list of numbers, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise InputError(fieldname, "contains NaN")
    if allow == "finite" and not np.isfinite(arr).all():
        raise InputError(fieldname, "contains inf")
    if allow == "lower" and (arr == np.inf).any():
        raise InputError(fieldname, "contains +inf (a lower bound)")
    if allow == "upper" and (arr == -np.inf).any():
        raise InputError(fieldname, "contains -inf (an upper bound)")
    return arr


def _symbol_count(d: dict[str, Any], fieldname: str) -> int | None:
    """Length of the serialized SX ``w`` or ``p`` (checked like a function), or None when absent."""
    import casadi as ca

    if fieldname not in d:
        return None
    _prescan(d[fieldname], fieldname)
    try:
        sx = ca.SX.deserialize(d[fieldname])
    except RuntimeError as exc:
        raise InputError(fieldname, f"cannot be deserialized as CasADi SX ({str(exc).splitlines()[-1]})") from None
    if not sx.is_valid_input():
        raise InputError(fieldname, "must be a vector of pure symbols")
    return int(sx.numel())


def load_nosbench(path: str | os.PathLike[str], *, max_bytes: int | str | None = None) -> NosbenchProblem:
    """Read a NOSBENCH CasADi JSON file into a :class:`NosbenchProblem` (all fields checked).

    The file is refused before it is read when it is above ``cap // JSON_EXPANSION`` bytes, the
    cap being ``max_bytes``, else ``$CONTACTMP_MAX_BYTES``, else
    :data:`contactmp.io.MAX_PROBLEM_BYTES` (see :func:`contactmp.io.max_problem_bytes`).
    Raises :class:`InputError` naming the field for a missing, malformed or refused field
    (including any function that is not a plain SX/MX graph), and ``"path"`` for a file that
    is too big or not JSON.
    """
    from contactmp.io import JSON_EXPANSION, max_problem_bytes, read_capped

    path = Path(path)
    cap = max_problem_bytes(max_bytes)
    limit = cap // JSON_EXPANSION
    data = read_capped(path, limit, f"the JSON limit of {limit} bytes (the size cap of {cap} bytes / "
                       f"{JSON_EXPANSION}: contactmp.io.MAX_PROBLEM_BYTES; raise it with CONTACTMP_MAX_BYTES or "
                       "max_bytes=)")
    try:
        d = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: bad JSON, or an integer longer than Python's int digit limit
        what = "nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError("path", f"{path} is not a readable JSON file ({what})") from None
    if not isinstance(d, dict):
        raise InputError("path", f"{path} must hold a JSON object with the NOSBENCH fields")
    w0 = _vector(d, "w0", allow="finite")
    lbw = _vector(d, "lbw", allow="lower")
    ubw = _vector(d, "ubw", allow="upper")
    p0 = _vector(d, "p0", allow="finite")
    lbg = _vector(d, "lbg", allow="lower")
    ubg = _vector(d, "ubg", allow="upper")
    n_w, n_p = w0.shape[0], p0.shape[0]
    if n_w == 0:
        raise InputError("w0", "is empty (no variables)")
    for name, arr, n in (("lbw", lbw, n_w), ("ubw", ubw, n_w), ("ubg", ubg, lbg.shape[0])):
        if arr.shape[0] != n:
            raise InputError(name, f"has length {arr.shape[0]}, expected {n}")
    if (lbw > ubw).any():
        raise InputError("lbw", f"exceeds ubw at index {int(np.flatnonzero(lbw > ubw)[0])}")
    if (lbg > ubg).any():
        raise InputError("lbg", f"exceeds ubg at index {int(np.flatnonzero(lbg > ubg)[0])}")
    for name, n in (("w", n_w), ("p", n_p)):
        m = _symbol_count(d, name)
        if m is not None and m != n:
            raise InputError(name, f"has {m} symbols but {name}0 has {n} values")
    g_fun = _load_function(d, "g_fun", n_w, n_p, lbg.shape[0])
    G_fun = _load_function(d, "G_fun", n_w, n_p, None)
    H_fun = _load_function(d, "H_fun", n_w, n_p, G_fun.numel_out(0))
    f_fun = _load_function(d, "objective_fun", n_w, n_p, 1)
    return NosbenchProblem(path.stem, w0, lbw, ubw, p0, lbg, ubg, g_fun, G_fun, H_fun, f_fun)


def is_nosbench_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` looks like a JSON object (its first non-blank byte is ``{``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


# -- Program and the paper's measures ----------------------------------------------------------
@dataclass
class NosbenchHandles:
    """The handles of the Program built by :func:`to_program` (``g``/``comp`` None when empty)."""

    w: Variables
    p: Parameters | None
    g: Constraint | None
    comp: Complementarity | None


def to_program(problem: NosbenchProblem) -> tuple[Program, NosbenchHandles]:
    """The MPCC ``min f(w,p) s.t. lbw <= w <= ubw, lbg <= g <= ubg, 0 <= G _|_ H >= 0`` as a Program.

    The pairs are added as they are; solve with ``sign_constraints=False`` so that ``G >= 0``,
    ``H >= 0`` are not imposed beyond the variable bounds (NOSBENCH's convention).
    """
    import casadi as ca

    from contactmp.program import Program

    prog = Program(problem.name or "nosbench")
    w = prog.add_variables("w", problem.n_w, problem.lbw, problem.ubw, init=problem.w0)
    p = prog.add_parameters("p", problem.n_p, problem.p0) if problem.n_p else None
    psym = p.sym if p is not None else ca.SX(0, 1)

    def ev(f: ca.Function) -> ca.SX:
        return ca.reshape(f(w.sym, psym), -1, 1)

    g = prog.add_constraint(ev(problem.g_fun), problem.lbg, problem.ubg, name="g") if problem.n_g else None
    comp = prog.add_complementarity(ev(problem.G_fun), ev(problem.H_fun), name="GH") if problem.n_comp else None
    prog.add_cost(ev(problem.objective_fun))
    return prog, NosbenchHandles(w, p, g, comp)


def nosbench_residuals(problem: NosbenchProblem, w: Any) -> dict[str, float]:
    """The paper's measures at ``w`` (evaluated with the file's own Functions, not the Program).

    ``feasibility`` = max absolute violation of ``lbw <= w <= ubw`` and ``lbg <= g <= ubg``;
    ``comp_residual`` = ``max_i G_i H_i`` (signed, 0 when there are no pairs);
    ``objective`` = ``f(w, p0)``. Non-finite ``w`` gives inf.
    """
    wv = np.asarray(w, dtype=float).ravel()
    if wv.shape != (problem.n_w,) or not np.isfinite(wv).all():
        return {"feasibility": math.inf, "comp_residual": math.inf, "objective": math.inf}
    p = problem.p0
    g = np.asarray(problem.g_fun(wv, p), dtype=float).ravel()
    G = np.asarray(problem.G_fun(wv, p), dtype=float).ravel()
    H = np.asarray(problem.H_fun(wv, p), dtype=float).ravel()
    f = float(problem.objective_fun(wv, p))
    viol = [np.maximum(problem.lbw - wv, 0.0), np.maximum(wv - problem.ubw, 0.0),
            np.maximum(problem.lbg - g, 0.0), np.maximum(g - problem.ubg, 0.0)]
    feas = max((float(np.max(v, initial=0.0)) for v in viol), default=0.0)
    comp = float(np.max(G * H, initial=0.0)) if G.size else 0.0
    out = {"feasibility": feas, "comp_residual": comp, "objective": f}
    return {k: (v if np.isfinite(v) else math.inf) for k, v in out.items()}


def meets_paper_criterion(residuals: dict[str, float]) -> bool:
    """The paper's criterion on :func:`nosbench_residuals`' measures: ``feasibility <= FEAS_TOL`` and
    ``comp_residual <= COMP_TOL``."""
    return bool(residuals["feasibility"] <= FEAS_TOL and residuals["comp_residual"] <= COMP_TOL)
