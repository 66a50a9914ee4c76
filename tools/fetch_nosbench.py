"""Fetch the NOSBENCH problems the tests and benchmarks use, checked file by file.

    python tools/fetch_nosbench.py DEST [--from DIR_OR_ARCHIVE] [--subsets nosbench,nosbench-more,nosbench-wide]

NOSBENCH (Nurkanovic, Pozharskiy, Diehl 2024; github nosnoc/nosbench) states no licence, so its
files are not part of this repository. This tool downloads the repository at commit ``8f44ce4``
(the codeload ``.tar.gz`` archive), keeps the CasADi JSON files of ``problems/casadi`` that
``tools/nosbench_manifest.json`` lists, checks each against the manifest's SHA-256 and writes them
to ``DEST/nosbench/``, ``DEST/nosbench-more/`` and ``DEST/nosbench-wide/`` (the three subsets the
project's tests and benchmarks use: 20 + 46 + 84 problems, about 107 MB). Then point the tests and
benchmarks at ``DEST``, the folder that *contains* the subset folders::

    CONTACTMP_NOSBENCH=DEST python -m pytest -q

``--from`` reads a local copy instead of the network: a ``.tar.gz`` / ``.tar`` / ``.zip`` archive of
the repository (as GitHub serves it), or a folder holding the files anywhere below it (a checkout
of nosnoc/nosbench, its ``problems/casadi`` folder, or a folder laid out like ``DEST``). Files are
found by name and accepted only when their SHA-256 matches the manifest, so the layout does not
matter and nothing else is written. Archive members are read as data (never extracted by their own
paths), and only regular files are read.

Files already in ``DEST`` with the right hash are kept. The exit code is 0 when every requested
file is in ``DEST`` and verified, 1 when some are missing or do not match (each one is named),
2 for bad arguments or an unreadable source.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Callable, Iterator

from contactmp.nosbench import NOSBENCH_ENV

HERE = Path(__file__).resolve().parent
#: names and SHA-256 of the files of each subset (no problem data)
MANIFEST = HERE / "nosbench_manifest.json"
#: the archive of nosnoc/nosbench at the manifest's commit
URL = "https://codeload.github.com/nosnoc/nosbench/tar.gz/{commit}"
#: the largest member read from an archive (the largest NOSBENCH file used is about 3.2 MB)
MAX_MEMBER_BYTES = 64 * 2**20


class FetchError(Exception):
    """A source that cannot be read, or a manifest that is malformed."""


def load_manifest(path: Path = MANIFEST) -> dict:
    """The manifest: ``{"repository", "commit", "path", "subsets": {subset: {file name: sha256}}}``.

    Raises :class:`FetchError` naming the field when a field is missing or malformed.
    """
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FetchError(f"manifest {path}: cannot be read as JSON ({exc})") from None
    if not isinstance(m, dict):
        raise FetchError(f"manifest {path}: must be a JSON object")
    for key in ("repository", "commit", "path"):
        if not isinstance(m.get(key), str) or not m[key]:
            raise FetchError(f"manifest {path}: field {key!r} must be a non-empty string")
    subsets = m.get("subsets")
    if not isinstance(subsets, dict) or not subsets:
        raise FetchError(f"manifest {path}: field 'subsets' must be a non-empty object")
    for subset, files in subsets.items():
        if not isinstance(files, dict):
            raise FetchError(f"manifest {path}: field 'subsets.{subset}' must map file names to SHA-256")
        for name, digest in files.items():
            if "/" in name or "\\" in name or name in ("", ".", "..") or not name.endswith(".json"):
                raise FetchError(f"manifest {path}: field 'subsets.{subset}' has a bad file name {name!r}")
            if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
                raise FetchError(f"manifest {path}: field 'subsets.{subset}.{name}' is not a SHA-256 hex digest")
    return m


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _candidates_in_folder(folder: Path, wanted: set[str]) -> Iterator[tuple[str, Callable[[], bytes]]]:
    """(file name, reader) for every regular file below ``folder`` whose name is wanted."""
    for dirpath, _dirnames, filenames in os.walk(folder):
        for fname in filenames:
            if fname in wanted:
                p = Path(dirpath) / fname
                if p.is_file() and not p.is_symlink():
                    yield fname, p.read_bytes


def _candidates_in_tar(path: Path, wanted: set[str]) -> Iterator[tuple[str, Callable[[], bytes]]]:
    try:
        tf = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise FetchError(f"--from {path}: not a readable tar archive ({exc})") from None
    with tf:
        for member in tf:
            name = member.name.rsplit("/", 1)[-1]
            if not member.isfile() or name not in wanted:
                continue
            if member.size > MAX_MEMBER_BYTES:
                raise FetchError(f"--from {path}: member {member.name} is {member.size} bytes, above {MAX_MEMBER_BYTES}")
            fh = tf.extractfile(member)
            if fh is None:
                continue
            data = fh.read(MAX_MEMBER_BYTES + 1)
            yield name, (lambda data=data: data)


def _candidates_in_zip(path: Path, wanted: set[str]) -> Iterator[tuple[str, Callable[[], bytes]]]:
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise FetchError(f"--from {path}: not a readable zip archive ({exc})") from None
    with zf:
        for info in zf.infolist():
            name = info.filename.rsplit("/", 1)[-1]
            if info.is_dir() or name not in wanted:
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                raise FetchError(f"--from {path}: member {info.filename} is {info.file_size} bytes, above {MAX_MEMBER_BYTES}")
            with zf.open(info) as fh:
                data = fh.read(MAX_MEMBER_BYTES + 1)
            yield name, (lambda data=data: data)


def candidates(source: Path, wanted: set[str]) -> Iterator[tuple[str, Callable[[], bytes]]]:
    """(file name, reader) for every file of ``source`` (a folder or an archive) whose name is wanted."""
    if source.is_dir():
        return _candidates_in_folder(source, wanted)
    if not source.is_file():
        raise FetchError(f"--from {source}: no such file or folder")
    if zipfile.is_zipfile(source):
        return _candidates_in_zip(source, wanted)
    return _candidates_in_tar(source, wanted)


def download(commit: str, into: Path, timeout: float = 120.0) -> Path:
    """Download the nosnoc/nosbench archive at ``commit`` into the folder ``into``; its path."""
    url = URL.format(commit=commit)
    out = into / f"nosbench-{commit}.tar.gz"
    print(f"downloading {url}", file=sys.stderr)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(out, "wb") as fh:  # noqa: S310 (fixed https URL)
            while block := resp.read(1 << 20):
                fh.write(block)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise FetchError(f"cannot download {url} ({exc}); download it elsewhere and pass it with "
                         "--from ARCHIVE, or pass a checkout of nosnoc/nosbench with --from DIR") from None
    return out


def fetch(dest: Path, source: Path | None = None, subsets: list[str] | None = None,
          manifest: dict | None = None) -> dict[str, list[str]]:
    """Write the manifest's files of ``subsets`` (default: all) into ``dest/<subset>/``, verified.

    ``source`` is a folder or archive to read them from; ``None`` downloads the archive. Returns
    ``{"written": [...], "kept": [...], "missing": [...], "mismatched": [...]}`` (paths relative to
    ``dest``). A file whose hash does not match is never written.
    """
    manifest = load_manifest() if manifest is None else manifest
    chosen = list(manifest["subsets"]) if subsets is None else subsets
    unknown = [s for s in chosen if s not in manifest["subsets"]]
    if unknown:
        raise FetchError(f"--subsets: unknown subset(s) {', '.join(unknown)}; the manifest has "
                         f"{', '.join(manifest['subsets'])}")
    # which subsets want each name, with its hash
    wanted: dict[str, list[tuple[str, str]]] = {}
    report: dict[str, list[str]] = {"written": [], "kept": [], "missing": [], "mismatched": []}
    for subset in chosen:
        for name, digest in manifest["subsets"][subset].items():
            target = dest / subset / name
            if target.is_file() and _file_sha256(target) == digest:
                report["kept"].append(f"{subset}/{name}")
            else:
                wanted.setdefault(name, []).append((subset, digest))
    if wanted:
        with tempfile.TemporaryDirectory() as tmp:
            src = download(manifest["commit"], Path(tmp)) if source is None else source
            bad: dict[str, str] = {}
            for name, read in candidates(src, set(wanted)):
                data = read()
                got = _sha256(data)
                for subset, digest in list(wanted.get(name, [])):
                    if got != digest:
                        bad[f"{subset}/{name}"] = got
                        continue
                    (dest / subset).mkdir(parents=True, exist_ok=True)
                    tmp_file = dest / subset / f".{name}.part"
                    tmp_file.write_bytes(data)
                    os.replace(tmp_file, dest / subset / name)
                    report["written"].append(f"{subset}/{name}")
                    bad.pop(f"{subset}/{name}", None)
                    wanted[name].remove((subset, digest))
                if name in wanted and not wanted[name]:
                    del wanted[name]
            for name, left in wanted.items():
                for subset, _digest in left:
                    key = f"{subset}/{name}"
                    (report["mismatched"] if key in bad else report["missing"]).append(key)
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest", type=Path, help="folder to write nosbench/, nosbench-more/, nosbench-wide/ into")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="a local archive (.tar.gz/.tar/.zip) or folder to read instead of downloading")
    ap.add_argument("--subsets", default=None,
                    help="comma-separated subsets to fetch (default: every subset of the manifest)")
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        manifest = load_manifest(args.manifest)
        subsets = None if args.subsets is None else [s.strip() for s in args.subsets.split(",") if s.strip()]
        report = fetch(args.dest, args.source, subsets, manifest)
    except FetchError as exc:
        print(f"fetch_nosbench: {exc}", file=sys.stderr)
        return 2
    for key in report["mismatched"]:
        print(f"fetch_nosbench: {key}: SHA-256 does not match the manifest; not written", file=sys.stderr)
    for key in report["missing"]:
        print(f"fetch_nosbench: {key}: not found in the source", file=sys.stderr)
    print(f"{len(report['written'])} written, {len(report['kept'])} already present, "
          f"{len(report['missing'])} missing, {len(report['mismatched'])} mismatched, in {args.dest}")
    if report["missing"] or report["mismatched"]:
        return 1
    print(f"point the tests and benchmarks at it: {NOSBENCH_ENV}={args.dest.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
