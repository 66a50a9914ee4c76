"""Every robot of example-robot-data loaded and simulated for 1 s (issue 36, item 3).

    python benchmarks/robot_zoo.py [--duration 1.0] [--h 0.01] [--formulation pyramid]
                                   [--only go1,talos] [--out DIR] [--doc docs/robots.md]

For each robot of :func:`contactmp.models.example_robots.example_robots` (the package's ``ROBOTS``
table when its Python module imports, else every URDF file it ships):
:func:`~contactmp.transcriptions.robot_zoo.simulate_example_robot` loads it (or records the contactmp
error that refuses it, naming the URDF element), then simulates ``--duration`` s with step ``--h``
and the default formulation: legged robots and humanoids stand on their feet under a stable PD
holding the reference posture plus the static torques, free-flyers without feet are dropped from
2 cm, fixed-base robots move under gravity held by the PD. The table gives the base, the joints
modelled (DoF), the contact points, the load time (symbolic model and its CasADi functions), the
mean wall time per step (``Result.time_s``: the step's data, its program, the solve and the
physics verdict), the status counts of the steps, the lowest gap over the run, and the verdict
(``ok``: every step solved and physical).

Output: ``DIR/robot_zoo.json`` (``DIR`` defaults to ``benchmarks/out``) and, with ``--doc``, the
table between the markers ``<!-- robot-zoo-table -->`` and ``<!-- /robot-zoo-table -->`` of that
Markdown file (``docs/robots.md``).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, finish, print_table, run_header  # noqa: E402

from contactmp.case_studies._study import markdown_table as study_markdown_table  # noqa: E402
from contactmp.models.example_robots import example_robots  # noqa: E402
from contactmp.models.urdf import example_robot_data_dir  # noqa: E402
from contactmp.transcriptions.robot_zoo import ZooResult, simulate_example_robot  # noqa: E402

COLUMNS = ("robot", "base", "DoF", "contacts", "mode", "load s", "ms/step", "steps", "status counts",
           "min gap (m)", "base drift (m)", "verdict")
BEGIN, END = "<!-- robot-zoo-table -->", "<!-- /robot-zoo-table -->"


def _row(r: ZooResult) -> list[Any]:
    if not r.loaded:
        why = " ".join(r.refused.replace(f"{example_robot_data_dir()}/", "").split())
        return [r.robot, r.base, "-", "-", "-", "-", "-", "-", "-", "-", "-", f"refused: {why}"]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.status_counts.items())) or "-"
    gap = "-" if not math.isfinite(r.min_gap) else f"{r.min_gap:.1e}"
    drift = "-" if not math.isfinite(r.base_drift) else f"{r.base_drift:.2g}"
    ms = "-" if not math.isfinite(r.ms_per_step) else f"{r.ms_per_step:.1f}"
    verdict = r.verdict + (f" ({len(r.locked)} joints locked)" if r.locked else "")
    return [r.robot, r.base, r.dof, r.contacts, r.mode, f"{r.load_s:.1f}", ms, r.steps, counts, gap,
            drift, verdict]


def markdown_table(results: Sequence[ZooResult]) -> str:
    """The table as GitHub Markdown (:func:`contactmp.case_studies._study.markdown_table`, a ``|``
    inside a cell escaped), without its final newline."""
    rows = [[str(c).replace("|", "\\|") for c in _row(r)] for r in results]
    return study_markdown_table(list(COLUMNS), rows).rstrip("\n")


def write_doc(path: Path, table: str, header: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` of ``path`` by ``header`` and ``table``."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END),
                 lambda _: f"{BEGIN}\n{header}\n\n{table}\n{END}", text, flags=re.S)
    path.write_text(new)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=1.0, help="simulated time per robot (s)")
    ap.add_argument("--h", type=float, default=0.01, help="time step (s)")
    ap.add_argument("--formulation", default="pyramid")
    ap.add_argument("--only", default="", help="comma-separated robot names or stems")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    ap.add_argument("--doc", type=Path, default=None, help="Markdown file whose table to replace")
    ap.add_argument("--from-json", type=Path, default=None,
                    help="re-render the table (and --doc) from a robot_zoo.json instead of running")
    args = ap.parse_args(argv)
    if args.from_json is not None:
        return rerender(args.from_json, args.doc)
    t_start = time.perf_counter()
    robots = example_robots()
    if args.only:
        want = set(args.only.split(","))
        robots = [r for r in robots if r.name in want or r.name.split("/")[-1] in want]
    results: list[ZooResult] = []
    for r in robots:
        try:
            res = simulate_example_robot(r, duration=args.duration, h=args.h, formulation=args.formulation)
        except Exception as exc:  # not a contactmp error: a bug to fix, recorded so the run goes on
            res = ZooResult(r.name, "free-flyer" if r.free_flyer else "fixed", False,
                            refused=f"UNEXPECTED {type(exc).__name__}: {exc}"[:300], verdict="error")
        results.append(res)
        print(f"{res.robot}: {_row(res)[2:]}", file=sys.stderr, flush=True)
    title = _title(args.duration, args.h, args.formulation)
    print_table(title, COLUMNS, [_row(r) for r in results])
    summary = _summary(results)
    print(summary)
    out = args.out / "robot_zoo.json"
    head = run_header("robot_zoo", ["python", "benchmarks/robot_zoo.py", *(argv or sys.argv[1:])], 0)
    base = robots[0].base_source if robots else ""
    record = {**head, "duration": args.duration, "h": args.h, "formulation": args.formulation,
              "base_source": base, "summary": summary, "robots": [r.to_dict() for r in results]}
    also = []
    if args.doc is not None:
        write_doc(args.doc, markdown_table(results),
                  _doc_header({**record, "wall_time_s": time.perf_counter() - t_start}))
        also.append(args.doc)
    return finish(out, record, t_start, *also)


def _title(duration: float, h: float, formulation: str) -> str:
    return f"example-robot-data robots, {duration:g} s at h = {h:g} s, formulation {formulation}"


def _summary(results: Sequence[ZooResult]) -> str:
    n_ok = sum(r.verdict == "ok" for r in results)
    n_ref = sum(not r.loaded for r in results)
    return (f"{len(results)} robots: {n_ok} simulated with every step solved and physical, "
            f"{len(results) - n_ok - n_ref} simulated with failed or unphysical steps, "
            f"{n_ref} refused by name")


def _doc_header(record: dict[str, Any]) -> str:
    m = record["machine"]
    return (f"{_title(record['duration'], record['h'], record['formulation'])}; {record['summary']}. "
            f"Base: {record['base_source']}. Generated by `python benchmarks/robot_zoo.py --doc "
            f"docs/robots.md` on {record['date_utc'][:10]} ({m.get('cpu') or '?'}, {m.get('cpus')} "
            f"cores), in {record.get('wall_time_s', 0) / 60:.0f} min.")


def rerender(path: Path, doc: Path | None) -> int:
    """Print the table of a saved ``robot_zoo.json`` and write it into ``doc``."""
    import json

    record = json.loads(path.read_text())
    fields = set(ZooResult.__dataclass_fields__)
    results = []
    for d in record["robots"]:
        d = {k: (math.nan if v is None and k in ("load_s", "ms_per_step", "ms_first_step", "min_gap",
                                                   "penetration_tol", "base_drift") else v)
             for k, v in d.items() if k in fields}
        d["locked"] = tuple(d.get("locked", ()))
        results.append(ZooResult(**d))
    print_table(_title(record["duration"], record["h"], record["formulation"]), COLUMNS,
                [_row(r) for r in results])
    if doc is not None:
        write_doc(doc, markdown_table(results), _doc_header(record))
        print(f"wrote {doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
