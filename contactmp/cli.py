"""The command line: ``contactmp solve FILE``, ``contactmp multistart FILE``, ``contactmp study NAME``, ``contactmp list``."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="contactmp: rigid-body contact as mathematical programs (LCP, NCP, QP, MPCC).\n\n"
    "Exit codes: 0 success (solve: a verified solution; multistart: at least one; study and list: "
    "ran), 1 ran without success (another status, no verified solution) or a failure that is not the "
    "input's, 2 bad input (a missing, unreadable or malformed file, a bad option or value). Each "
    "command's --help says what success means for it. Tables fit a terminal's width; piped or "
    "redirected output keeps one line per table row.",
)
err = Console(stderr=True)
#: ``time.perf_counter()`` at the start of the process, set by :func:`main` (the ``contactmp``
#: command); ``None`` when the app runs inside another program (tests, ``CliRunner``)
_PROCESS_T0: float | None = None


def _process_age() -> float:
    """Seconds since this process started, from ``/proc/self/stat`` (0 where that is not available)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, ticks after boot
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def _command_t0() -> float:
    """When this command's ``--time-limit`` started: at the start of the process for the ``contactmp``
    command (start-up and loading count), at the call for an app run in-process."""
    return time.perf_counter() if _PROCESS_T0 is None else _PROCESS_T0


def _time_left(limit: float, t0: float) -> float:
    """What is left at this moment of a ``--time-limit`` that started at ``t0`` (at least 1 ms, so
    that a solve still starts, checks its first iterate and reports ``time_limit``)."""
    return max(limit - (time.perf_counter() - t0), 1e-3)


def _error(message: str) -> None:
    """Print ``error: MESSAGE`` on stderr; the message is shown as text (a file's content may look
    like rich markup, e.g. ``[/x]``, and must neither be interpreted nor crash the printer)."""
    from rich.markup import escape

    err.print(f"[red]error:[/red] {escape(message)}")


#: the exit codes of every command (see the app's help): success; ran without success (not solved)
#: or failed for a reason that is not the input's; bad input
EXIT_OK, EXIT_NOT_SOLVED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_FAILED = EXIT_NOT_SOLVED


def _print_table(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> None:
    """Print a table with these columns and rows on stdout (:func:`contactmp.progress.print_table`:
    fitted to a terminal's width, at its natural width when piped)."""
    from contactmp.progress import print_table

    print_table(title, columns, rows)


@app.command()
def solve(
    file: Path = typer.Argument(
        ..., exists=True, dir_okay=False,
        help="Problem file, read by content: LCP (.npz with M, q; Siconos .dat) or fc3d "
        "(.npz with W, q, mu; Siconos .dat; FCLIB HDF5); a NOSBENCH MPCC (CasADi .json) is solved "
        "with an MPCC strategy (--solver scholtes, scholtes_linf, elastic_l1, fischer_burmeister, direct, "
        "portfolio).",
    ),
    solver: Optional[str] = typer.Option(None, help="Solver name (see `contactmp list`; for a NOSBENCH MPCC "
                                         "an MPCC strategy); default tries several."),
    tol: float = typer.Option(
        1e-8, help="Tolerance on the independent residual: ||min(z, Mz+q)||_inf for an LCP, the "
        "normalized natural-map residual for fc3d."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    time_limit: float = typer.Option(
        60.0, "--time-limit", help="Wall-clock seconds for the whole command, start-up and loading "
        "included (inf: none). When reached, the answer is the iterate of least independent "
        "residual seen, status time_limit."),
    progress_delay: float = typer.Option(2.0, "--progress-delay", hidden=True,
                                         help="Seconds before the progress line appears on stderr."),
    sensitivities: bool = typer.Option(
        False, "--sensitivities", help="Add the Jacobians of a solved answer with respect to the data "
        "(LCP: dz_dq; fc3d: dr_dq and dr_dmu), by implicit differentiation on its active set, with a "
        "degenerate flag and the degenerate pairs (differentiated on a documented side)."),
) -> None:
    """Solve one complementarity problem read from FILE and report a verified status.

    The problem class (LCP or fc3d, the Coulomb-cone problem) and the file format are decided by
    the file's content. A solve that runs longer than 2 s shows a progress line on stderr (solver,
    iteration, residual); stdout holds only the report (with --json, one JSON object).

    Exit code: 0 when the status is solved (a verified solution: the independent residual is
    within --tol); 1 for any other status (ray_termination, max_iter, time_limit, ...: the report,
    best iterate included, is printed all the same) and when the named solver's module cannot be
    loaded; 2 for bad input: a missing, unreadable or malformed file, a bad option or value (the
    message names the field). A NOSBENCH MPCC: 0 when solved by the paper's criterion, else 1.
    """
    from contactmp.errors import ContactMPError
    from contactmp.io import load_problem
    from contactmp.nosbench import is_nosbench_file
    from contactmp.progress import ProgressLine

    t0 = _command_t0()
    limit = _check_time_limit_option(time_limit)
    if is_nosbench_file(file):  # a NOSBENCH MPCC (CasADi JSON)
        _solve_nosbench(file, as_json, _time_left(limit, t0), solver)
    kind = "problem"
    line = ProgressLine(delay=progress_delay)
    try:
        kind, arrays = load_problem(file)  # before the solvers are imported: bad files fail fast
        from contactmp.solvers.registry import solve_fc3d, solve_lcp

        if kind == "fc3d":
            W, q, mu = arrays
            res = solve_fc3d(W, q, mu, solver=solver, tol=tol, time_limit=_time_left(limit, t0), progress=line)
        else:
            M, q = arrays
            res = solve_lcp(M, q, solver=solver, tol=tol, time_limit=_time_left(limit, t0), progress=line)
    except ContactMPError as exc:
        line.close()
        _error(str(exc))
        raise typer.Exit(EXIT_BAD_INPUT)
    except ImportError as exc:  # a registered solver whose module (or its backend) is missing
        line.close()
        _error(f"a module needed to solve this {kind} could not be loaded: {exc}")
        raise typer.Exit(EXIT_FAILED)
    line.close()
    n = int(len(q))
    sens = _sensitivities(kind, arrays, res) if sensitivities else None
    if as_json:
        d = res.to_dict()
        out = {"kind": kind, **{k: d[k] for k in ("status", "solver", "residual", "iterations", "time_s")}}
        x, v = ("r", "u") if kind == "fc3d" else ("z", "w")
        out.update({x: d["x"], v: d["extras"].get(v)})
        out.update(message=d["message"], attempts=d["extras"].get("attempts"), problem=str(file), n=n)
        if kind == "fc3d":
            out["nc"] = n // 3
        if sensitivities:
            out["sensitivities"] = sens
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        size = f"nc = {n // 3} contacts" if kind == "fc3d" else f"n = {n}"
        _print_table(f"{file.name} ({kind}, {size})", ("status", "solver", "residual", "iterations", "time"),
                     [[res.status.value, res.solver, f"{res.residual:.2e}", str(res.iterations),
                       f"{res.time_s*1e3:.3f} ms"]])
        if res.message:
            Console().print(res.message)
        if sens is not None:
            Console().print(f"sensitivities: {sens['reason']}" if "reason" in sens else
                            f"sensitivities: degenerate {sens['degenerate']} (pairs {sens['degenerate_pairs']}); "
                            + ", ".join(f"{k} {len(sens[k])} x {len(sens[k][0]) if sens[k] else 0}"
                                        for k in ("dz_dq", "dr_dq", "dr_dmu") if k in sens) + " (in --json)")
    # the report is printed whatever the status; the exit code says whether it is a solution
    raise typer.Exit(EXIT_OK if res.success else EXIT_NOT_SOLVED)


def _sensitivities(kind: str, arrays: Any, res: Any) -> dict[str, Any]:
    """The JSON-ready sensitivities of a solved answer (:mod:`contactmp.solvers.sensitivity`), or
    ``{"reason": ...}`` when the answer is not solved (no solution to differentiate)."""
    if not res.success:
        return {"reason": f"not computed: the answer is {res.status.value}, not a verified solution"}
    if kind == "fc3d":
        from contactmp.solvers.fc3d import fc3d_sensitivity

        return fc3d_sensitivity(*arrays, res).as_dict()
    from contactmp.solvers.sensitivity import lcp_sensitivity

    return lcp_sensitivity(*arrays, res).as_dict()


def _check_time_limit_option(value: float) -> float:
    """``--time-limit`` as seconds (inf: none), or exit 2 naming the option."""
    from contactmp.errors import OptionError
    from contactmp.progress import check_time_limit

    try:
        return check_time_limit(value)
    except OptionError:
        _error(f"--time-limit (time_limit) must be a positive number of seconds (inf: no limit), got {value!r}")
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _solve_nosbench(file: Path, as_json: bool, time_limit: float = 60.0, strategy: str | None = None) -> None:
    """Solve a NOSBENCH MPCC with an MPCC strategy (``--solver``; default: the portfolio of
    :func:`contactmp.solvers.nlp.nosbench.solve_nosbench`), judged by the paper's criterion, with the
    B-stationarity certificate of the answer; exit 0 when solved (the paper's criterion), 1 for any
    other status, 2 on bad input."""
    from contactmp.errors import ContactMPError
    from contactmp.solvers.nlp import solve_nosbench

    try:
        out = solve_nosbench(file, time_limit=time_limit, **({} if strategy is None else {"strategy": strategy}))
    except ContactMPError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_BAD_INPUT)
    if as_json:
        sys.stdout.write(json.dumps({"kind": "mpcc", **out}) + "\n")
    else:
        cert = out.get("b_stationarity") or {}
        _print_table(f"{file.name} (NOSBENCH MPCC, n_w = {out['n_w']}, {out['n_comp']} pairs)",
                     ("status", "strategy", "objective", "max G_i H_i", "feasibility", "B-stationary", "time"),
                     [[out["status"], out["strategy"], str(out["objective"]), str(out["comp_residual"]),
                       str(out["feasibility"]), str(cert.get("verdict", "-")), f"{out['time_s']:.3f} s"]])
        Console().print(out["message"])
    raise typer.Exit(EXIT_OK if out["status"] == "solved" else EXIT_NOT_SOLVED)


@app.command()
def multistart(
    file: Path = typer.Argument(..., exists=True, dir_okay=False,
                                help="LCP or fc3d problem file (as for `contactmp solve`)."),
    starts: int = typer.Option(100, min=1, help="Number of starts (structured mode guesses first)."),
    seed: int = typer.Option(0, min=0, help="Start i draws from numpy.random.default_rng([seed, i])."),
    structured: bool = typer.Option(True, help="Include the structured starts (contact modes guessed)."),
    tol_cluster: Optional[float] = typer.Option(None, help="Clustering tolerance (relative, inf-norm)."),
    workers: int = typer.Option(0, min=0, help="Dask local-cluster workers (0: run in this process)."),
    scheduler: Optional[str] = typer.Option(None, help="Address of an existing Dask scheduler, tcp://HOST:PORT."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default: results/multistart-FILE)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
    time_limit: float = typer.Option(
        600.0, "--time-limit", help="Wall-clock seconds for the whole command (inf: none); starts not "
        "finished by then are left for a rerun, which resumes."),
) -> None:
    """Solve one LCP or fc3d problem from many starts and count its distinct verified solutions.

    Every start is appended to OUT/starts.jsonl as it finishes (rerun the same command to resume);
    OUT/summary.json lists the distinct solutions with the share of starts that reached each. A run
    cut short by --time-limit says so (summary: complete false, extras.cut_short true).

    Exit code: 0 when at least one verified solution was found (n_distinct >= 1; also for a run cut
    short by --time-limit: what was found is verified); 1 when no start reached a verified
    solution (the problem may have none, or too few starts ran); 2 for bad input: a missing,
    unreadable or malformed file (OUT is not created then), a bad option or value.
    """
    from contactmp.errors import ContactMPError
    from contactmp.io import load_problem
    from contactmp.result import jsonable
    from contactmp.solvers.multistart import multistart as run_multistart

    t0 = _command_t0()
    limit = _check_time_limit_option(time_limit)
    out = out or Path("results") / f"multistart-{file.stem}"
    try:
        _, arrays = load_problem(file)  # before OUT is made: a bad file leaves nothing behind
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _error(f"--out: cannot create the folder {out}: {exc}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        res = run_multistart(tuple(arrays), starts=starts, seed=seed, structured=structured,
                             tol_cluster=tol_cluster, workers=workers, scheduler=scheduler,
                             store_path=out / "starts.jsonl", progress=not as_json,
                             time_limit=_time_left(limit, t0))
    except ContactMPError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_BAD_INPUT)
    summary = jsonable(res.to_dict())
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    code = EXIT_OK if res.n_distinct > 0 else EXIT_NOT_SOLVED
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        raise typer.Exit(code)
    motions = res.n_distinct_motions
    judged = (f", {motions} distinct motion(s) by {res.motion_map['name']} (tol {res.tol_motion:.1e})"
              if motions is not None else f" ({res.motion_note})")
    _print_table(f"{file.name}: {res.n_distinct_impulses} distinct verified impulse set(s){judged} from {starts} starts",
                 ("#", "solution (first 6 entries)", "starts reaching it", "share", "residual", "verified", "motion"),
                 [[str(i), ", ".join(f"{v:.4g}" for v in c.x[:6]) + (", ..." if len(c.x) > 6 else ""), str(c.count),
                   f"{c.share:.3f}", f"{c.residual:.1e}", str(c.verified), "-" if c.motion is None else str(c.motion)]
                  for i, c in enumerate(res.clusters)])
    if res.extras.get("cut_short"):
        Console().print(f"[yellow]time limit {limit:g} s reached:[/yellow] {res.n_run} of {starts} starts finished "
                        f"({res.extras['starts_not_run']} not run); rerun the same command to resume")
    Console().print(f"time per start {1e3 * res.time_per_start_s:.3f} ms; wrote {out}/starts.jsonl, summary.json")
    raise typer.Exit(code)


@app.command()
def study(
    name: str = typer.Argument(..., help="Study name (see `contactmp list`)."),
    quick: bool = typer.Option(False, "--quick", help="A small, fast version of the study."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default: results/NAME[-quick])."),
    seed: int = typer.Option(0, min=0, help="Seed of every random choice in the study (>= 0)."),
    workers: Optional[int] = typer.Option(
        None, min=0, help="Dask local-cluster workers for studies that run in parallel (default 2; 0: "
        "in this process)."),
    scheduler: Optional[str] = typer.Option(None, help="Existing Dask scheduler, tcp://HOST:PORT."),
    only: Optional[str] = typer.Option(
        None, help="Comma-separated task names: run only these tasks of a study that has tasks "
        "(the report still covers every record in OUT)."),
    time_limit: Optional[float] = typer.Option(
        None, min=0, help="Seconds after which a study that supports it starts no new run (the rest "
        "resumes on the next call with the same OUT)."),
) -> None:
    """Run a case study; writes summary.json, records.jsonl, table.md and PNG figures into OUT.

    An interrupted run resumes where it stopped when started again with the same OUT. Studies whose
    work items are independent (the trajectory-optimization and uniqueness studies) run them through
    Dask (--workers, --scheduler); the others run in this process and say so if given those options.
    On a terminal the tables of table.md are printed as tables fitted to its width (wide ones in
    groups of columns); piped or redirected, table.md is printed as it is (markdown, one line a row).

    Exit code: 0 when the study ran and wrote its files, whatever its items found (solver failures
    are results, counted in the table; a run stopped by --time-limit too: rerun to resume); 2 for
    bad input: an unknown study, a bad option or value, an option the study does not have; 1 for
    any other failure (an error raised while running).
    """
    from contactmp.case_studies import study_module
    from contactmp.errors import ContactMPError

    try:
        mod = study_module(name)
    except ContactMPError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_BAD_INPUT)
    out = out or Path("results") / (name + ("-quick" if quick else ""))
    import inspect

    parallel = "workers" in inspect.signature(mod.run).parameters
    if not parallel and (workers is not None or scheduler is not None):
        err.print(f"[yellow]note:[/yellow] study '{name}' runs in this process; --workers/--scheduler ignored")
    kwargs = {"workers": workers, "scheduler": scheduler} if parallel else {}
    if only is not None:
        if "only" not in inspect.signature(mod.run).parameters:
            _error(f"study '{name}' has no tasks to choose from (--only)")
            raise typer.Exit(EXIT_BAD_INPUT)
        kwargs["only"] = [t.strip() for t in only.split(",") if t.strip()]
    if time_limit is not None:
        if "time_limit" not in inspect.signature(mod.run).parameters:
            _error(f"study '{name}' has no time limit option (--time-limit)")
            raise typer.Exit(EXIT_BAD_INPUT)
        kwargs["time_limit"] = time_limit
    try:
        summary = mod.run(out=out, quick=quick, seed=seed, **kwargs)
    except ContactMPError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_BAD_INPUT)
    from contactmp.case_studies._study import print_markdown

    print_markdown((out / "table.md").read_text())
    Console().print(f"[green]wrote[/green] {out}/summary.json, records.jsonl, table.md, *.png")
    headline = summary.get("headline")
    if headline:
        Console().print(headline)


@app.command("list")
def list_() -> None:
    """List the solvers and the case studies.

    Exit code: 0.
    """
    from contactmp.case_studies import STUDIES, study_module
    from contactmp.solvers.registry import DEFAULT_FC3D_ORDER, DEFAULT_LCP_ORDER, FC3D_SOLVERS, LCP_SOLVERS

    for title, registry, order in (
        ("LCP solvers (--solver)", LCP_SOLVERS, DEFAULT_LCP_ORDER),
        ("fc3d (Coulomb-cone) solvers (--solver)", FC3D_SOLVERS, DEFAULT_FC3D_ORDER),
    ):
        _print_table(title, ("name", "module"), [[k, v] for k, v in registry.items()])
        Console().print(f"default (no --solver) tries: {', '.join(order)}")
    _print_table("Case studies (contactmp study NAME)", ("name", "what it shows"),
                 [[k, getattr(study_module(k), "DESCRIPTION", "")] for k in STUDIES])


def main() -> None:
    """The ``contactmp`` command: run the app, then end the process without the interpreter's teardown.

    Everything the command wrote is flushed and every ``atexit`` handler has run (logging, Dask)
    before ``os._exit``; skipped is only the destruction of modules and the C++ static destructors of
    LLVM (numba), which cost about 0.3 s at the end of every call. In-process callers (tests, typer's
    ``CliRunner``) use ``app`` and keep the normal exit.
    """
    import atexit

    global _PROCESS_T0
    _PROCESS_T0 = time.perf_counter() - _process_age()
    try:
        app()
        code: int = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # SystemExit("text") prints the text and exits 1, as Python does
            print(exc.code, file=sys.stderr)
            code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
