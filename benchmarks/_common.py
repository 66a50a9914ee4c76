"""What every benchmark script shares: where the problem files are, the machine and versions record,
JSON output (the JSONL records go through :class:`contactmp.records.RecordStore`), rich tables,
median timing, and calling Siconos in a subprocess.

Problem files: the Siconos LCP/fc3d problems and Pyomo's MPEC examples ship with the repository
in ``tests/data`` (:data:`DATA`, :func:`data_files`). NOSBENCH states no licence and is not in the
repository: ``python tools/fetch_nosbench.py DEST`` writes ``DEST/nosbench/``,
``DEST/nosbench-more/`` and ``DEST/nosbench-wide/``, and the benchmarks read them from the folder
``DEST`` given by ``--data DEST`` or ``$CONTACTMP_NOSBENCH`` (:func:`nosbench_files`).

Siconos (Debian's python3-siconos) is built for Debian's own numpy, so it runs only under
``/usr/bin/python3``. Its runs are optional: ``$CONTACTMP_SICONOS_TOOL`` names a script that
solves one ``.npz`` problem file there and prints one JSON line (called as ``/usr/bin/python3
TOOL PROBLEM.npz --kind lcp|fc3d --solver NAME --tol T --max-iter K --repeats R``; output keys
``info``, ``iterations``, ``time_s``, ``x``, ``y``); without it the Siconos columns are skipped
with a message. The tool is not part of this repository. We never trust its ``info``: every answer
is judged by our own residual.
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata as _md
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from contactmp.nosbench import NOSBENCH_ENV, NOSBENCH_FETCH
from contactmp.result import jsonable

REPO = Path(__file__).resolve().parents[1]
#: the interpreter that has python3-siconos
SYSTEM_PYTHON = "/usr/bin/python3"


#: the Siconos and Pyomo problems shipped with the repository (``tests/data``, see its README.md)
DATA = REPO / "tests" / "data"
#: the variable naming the (optional) Siconos tool script
SICONOS_TOOL_ENV = "CONTACTMP_SICONOS_TOOL"


def data_files(kind: str, pattern: str, what: str) -> list[Path]:
    """The files ``pattern`` of ``tests/data/KIND`` (``lcp``, ``fc3d``, ``raw``, ``pyomo_mpec``),
    sorted by name; exits naming ``what`` when there are none."""
    folder = DATA / kind
    files = sorted(folder.glob(pattern))
    if not files:
        raise SystemExit(f"no {what} problems in {folder}: the repository's tests/data/{kind} is missing "
                         "or empty (it ships with the repository; restore it with git)")
    return files


def add_nosbench_argument(ap: Any) -> None:
    """Add ``--data DEST`` (the folder holding the NOSBENCH subsets) to the parser ``ap``."""
    ap.add_argument("--data", type=Path, default=None,
                    help=f"the folder that contains nosbench/, nosbench-more/, nosbench-wide/ (default: "
                         f"${NOSBENCH_ENV}); write it with `{NOSBENCH_FETCH}`")


def use_nosbench_argument(args: Any) -> None:
    """Make ``--data`` (when given) the NOSBENCH folder for this process and the ones it starts
    (it sets ``$CONTACTMP_NOSBENCH``, which worker processes inherit)."""
    if getattr(args, "data", None) is not None:
        os.environ[NOSBENCH_ENV] = str(Path(args.data).resolve())


def nosbench_root() -> Path:
    """The folder holding the NOSBENCH subsets: ``$CONTACTMP_NOSBENCH`` (set by ``--data``);
    exits with a message naming the fetch command when it is not set or not a folder."""
    root = os.environ.get(NOSBENCH_ENV)
    if not root:
        raise SystemExit(f"NOSBENCH data not given: NOSBENCH states no licence, so it is not in the repository. "
                         f"Run `{NOSBENCH_FETCH}` and pass --data DEST or set {NOSBENCH_ENV}=DEST "
                         "(the folder that contains nosbench/, nosbench-more/, nosbench-wide/)")
    if not Path(root).is_dir():
        raise SystemExit(f"{NOSBENCH_ENV}={root} is not a folder; run `{NOSBENCH_FETCH}` and point it at DEST")
    return Path(root).resolve()


def nosbench_files(subset: str, pattern: str = "*.json") -> list[Path]:
    """The files ``pattern`` of the NOSBENCH subset ``subset`` (``nosbench``, ``nosbench-more``,
    ``nosbench-wide``) under :func:`nosbench_root`, sorted by name; exits naming the fetch command
    when there are none."""
    folder = nosbench_root() / subset
    files = sorted(folder.glob(pattern))
    if not files:
        raise SystemExit(f"no NOSBENCH ({subset}) problems in {folder}; run `{NOSBENCH_FETCH}` "
                         f"(or `{NOSBENCH_FETCH} --subsets {subset}`) and point --data or {NOSBENCH_ENV} at DEST")
    return files


def siconos_tool() -> Path | None:
    """The Siconos tool script named by ``$CONTACTMP_SICONOS_TOOL``, or None when it is not set."""
    tool = os.environ.get(SICONOS_TOOL_ENV)
    return Path(tool).resolve() if tool else None


# --------------------------------------------------------------------------------------------
# machine and versions


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine_record() -> dict[str, Any]:
    """The machine a benchmark ran on: OS, CPU model, core count, memory, Python."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": sys.version.split()[0],
    }


def siconos_version() -> str | None:
    """The installed python3-siconos package version (Debian), or ``None`` if it is not installed."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "python3-siconos"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def versions(packages: Sequence[str] = ("contactmp", "numpy", "scipy", "numba")) -> dict[str, Any]:
    """Versions of our Python packages and of Siconos."""
    out: dict[str, Any] = {}
    for pkg in packages:
        try:
            out[pkg] = _md.version(pkg)
        except _md.PackageNotFoundError:
            out[pkg] = None
    out["siconos"] = siconos_version()
    return out


def siconos_available() -> tuple[bool, str]:
    """Whether ``/usr/bin/python3 -c "import siconos.numerics"`` works, and why not if it does not."""
    if not Path(SYSTEM_PYTHON).exists():
        return False, f"{SYSTEM_PYTHON} does not exist"
    tool = siconos_tool()
    if tool is None:
        return False, (f"{SICONOS_TOOL_ENV} is not set (the script that runs one problem through "
                       "Siconos; see benchmarks/_common.py)")
    if not tool.is_file():
        return False, f"the Siconos tool {tool} ({SICONOS_TOOL_ENV}) is not a file"
    try:
        out = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import siconos.numerics"],
            capture_output=True, text=True, timeout=120, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{SYSTEM_PYTHON} -c 'import siconos.numerics' failed: {exc}"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        return False, f"{SYSTEM_PYTHON} cannot import siconos.numerics: {last}"
    return True, ""


# --------------------------------------------------------------------------------------------
# Siconos


def siconos_solve(
    problem: Path,
    *,
    kind: str,
    solver: str,
    tol: float = 1e-8,
    max_iter: int = 10000,
    repeats: int = 3,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    """Solve ``problem`` (an ``.npz`` file) with Siconos' ``solver`` in a subprocess.

    Returns the tool's JSON (``info``, ``iterations``, ``time_s`` = median over its repeats of the
    driver call alone, ``x``, ``y``) plus ``wall_s`` (the whole subprocess). On a crash, timeout or
    unreadable output, returns ``{"error": ...}`` instead: the caller counts that as not solved.
    """
    tool = siconos_tool()
    if tool is None:
        return {"error": f"{SICONOS_TOOL_ENV} is not set", "wall_s": 0.0}
    cmd = [
        SYSTEM_PYTHON, str(tool), str(problem), "--kind", kind, "--solver", solver,
        "--tol", repr(tol), "--max-iter", str(max_iter), "--repeats", str(repeats),
    ]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout_s:.0f} s", "wall_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("{")]
    if out.returncode != 0 or not lines:
        err = (out.stderr.strip().splitlines() or [f"exit code {out.returncode}, no output"])[-1]
        return {"error": f"{tool.name} failed: {err}", "wall_s": wall}
    try:
        rec = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {"error": f"unreadable output of {tool.name} ({exc})", "wall_s": wall}
    rec["wall_s"] = wall
    return rec


# --------------------------------------------------------------------------------------------
# timing


def median_time(fn: Callable[[], Any], repeats: int,
                stop_after_s: float = math.inf) -> tuple[float, list[float], Any]:
    """Call ``fn`` ``repeats`` times (no more once a call took longer than ``stop_after_s``);
    return (median wall time, all times, the last return value)."""
    times: list[float] = []
    value: Any = None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
        if times[-1] > stop_after_s:
            break
    return statistics.median(times), times, value


# --------------------------------------------------------------------------------------------
# output


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (numpy-safe), creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(obj), indent=2) + "\n")
    return path


def finish(path: Path, results: dict[str, Any], t_start: float, *also: Path) -> int:
    """Write ``results`` with ``wall_time_s`` (since the ``time.perf_counter()`` time ``t_start``)
    as JSON to ``path``, say on stderr which files the run wrote (``path`` and ``also``); 0."""
    write_json(path, {**results, "wall_time_s": time.perf_counter() - t_start})
    names = [str(f) for f in (path, *also)]
    print(f"wrote {names[0]}" if len(names) == 1 else f"wrote {', '.join(names[:-1])} and {names[-1]}",
          file=sys.stderr)
    return 0


def run_header(name: str, argv: Sequence[str], seed: int) -> dict[str, Any]:
    """The common head of a ``results.json``: benchmark, command, seed, date, machine, versions."""
    return {
        "benchmark": name,
        "command": " ".join(argv),
        "seed": seed,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_record(),
        "versions": versions(),
    }


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                caption: str | None = None) -> None:
    """Print a table (right-aligned columns except the first) with
    :func:`contactmp.progress.print_table`: fitted to a terminal's width, one line a row in a log."""
    from contactmp.progress import print_table as rich_table

    rich_table(title, columns, rows, caption=caption, justify=["left"] + ["right"] * (len(columns) - 1))


def fmt_time(t: float | str | None) -> str:
    """A time in s, ms or us, three significant digits (a JSON string such as "inf" too)."""
    t = None if t is None else float(t)
    if t is None or not math.isfinite(t):
        return "-"
    if t >= 1.0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def fmt_residual(r: float | str | None) -> str:
    """A residual in short scientific notation (a JSON string such as "inf" too)."""
    if r is None:
        return "-"
    r = float(r)
    if not math.isfinite(r):
        return str(r)
    return "0" if r == 0 else f"{r:.1e}"


# --------------------------------------------------------------------------------------------
# performance profiles (Dolan and More 2002)


def performance_profile(
    times: dict[str, Sequence[float | None]], tau_max: float | None = None, points: int = 400
) -> dict[str, Any]:
    """Dolan-More performance profile of per-problem solve times.

    ``times[s][p]`` is solver ``s``'s time on problem ``p``, ``None`` (or inf) when ``s`` did not
    solve ``p``. With ``t_best(p) = min_s t[s][p]`` over the solvers that solved ``p``, the ratio
    is ``r[s][p] = t[s][p] / t_best(p)`` and the profile ``rho_s(tau)`` is the fraction of ALL
    problems (those nobody solved included, as failures for everyone) with ``r[s][p] <= tau``.

    Returns ``{"tau": [...], "rho": {s: [...]}, "ratios": {s: [...]}, "problems": P}`` with
    ``tau`` on a log grid from 1 to ``tau_max`` (default: 1.5 times the largest finite ratio, at
    least 2).
    """
    solvers = list(times)
    if not solvers:
        return {"tau": [], "rho": {}, "ratios": {}, "problems": 0}
    n_problems = len(times[solvers[0]])
    if any(len(times[s]) != n_problems for s in solvers):
        raise ValueError("every solver needs one time per problem")

    def _t(v: float | None) -> float:
        return math.inf if v is None or not math.isfinite(v) else max(float(v), 1e-12)

    table = np.array([[_t(v) for v in times[s]] for s in solvers]).reshape(len(solvers), n_problems)
    best = table.min(axis=0) if n_problems else np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(np.isfinite(table), table / best, np.inf)
    finite = ratios[np.isfinite(ratios)]
    top = tau_max if tau_max is not None else max(2.0, float(finite.max()) * 1.5 if finite.size else 2.0)
    tau = np.unique(np.concatenate([np.geomspace(1.0, top, points), finite[finite <= top]]))
    rho = {
        s: [float(np.count_nonzero(ratios[k] <= t)) / max(n_problems, 1) for t in tau]
        for k, s in enumerate(solvers)
    }
    return {"tau": tau.tolist(), "rho": rho,
            "ratios": {s: [None if not math.isfinite(v) else float(v) for v in ratios[k]]
                       for k, s in enumerate(solvers)},
            "problems": n_problems}


def plot_performance_profile(profile: dict[str, Any], path: Path, title: str,
                             styles: dict[str, dict[str, Any]] | None = None) -> Path:
    """Draw ``profile`` (from :func:`performance_profile`) as step curves, log2 tau axis, into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = styles or {}
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    tau = np.asarray(profile["tau"], dtype=float)
    for s, rho in profile["rho"].items():
        ax.step(tau, rho, where="post", label=s, linewidth=1.8, **styles.get(s, {}))
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, float(tau.max()) if tau.size else 2.0)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("tau: within a factor tau of the fastest solver on the problem (log2 scale)")
    ax.set_ylabel(f"fraction of the {profile['problems']} problems solved")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return save_figure(fig, path)


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (PNG by its suffix; folders created) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def paper_judge(problem: Any, w: np.ndarray) -> dict[str, Any]:
    """The NOSBENCH paper's measures at ``w`` (``objective``, ``feasibility``, ``comp_residual``, from
    the file's own Functions) and ``solved``: its criterion (feasibility <= 1e-6, signed
    max_i G_i H_i <= 1e-7)."""
    from contactmp.nosbench import meets_paper_criterion, nosbench_residuals

    r = nosbench_residuals(problem, w)
    return {**r, "solved": meets_paper_criterion(r)}


def nosbench_symbols(pb: Any) -> tuple[Any, Any, Any, Callable[[Any], Any]]:
    """CasADi symbols ``w`` (n_w), ``p`` (n_p) and ``sigma`` for a NOSBENCH problem ``pb``, and
    ``ev(F)``: the file's Function ``F(w, p)`` as a column expression in them."""
    import casadi as ca

    w = ca.SX.sym("w", pb.n_w)
    p = ca.SX.sym("p", pb.n_p)
    sigma = ca.SX.sym("sigma")

    def ev(f: Any) -> Any:
        return ca.reshape(f(w, p), -1, 1)

    return w, p, sigma, ev
