"""A corpus of malformed problem files, generated (no binary blobs are committed).

:func:`corpus_cases` lists the cases (cheap: nothing is written), :func:`write_corpus` writes
each into a folder and returns ``{name: (case, path)}``. A :class:`Case` is a file name, the
field its error must name, the environment the CLI runs with (a few cases lower the size cap
through ``CONTACTMP_MAX_BYTES``) and the function that writes it. :func:`write_legal_extremes` writes
problems that are legal but extreme (indefinite matrices, entries near the float64 limits): they
must load, and the solve's status says what happened.

Run as a script to write the corpus into a folder: ``python tests/malformed_corpus.py DIR``.
"""
from __future__ import annotations

import functools
import json
import pickle
import shutil
import struct
import subprocess
import sys
import textwrap
import warnings
import zipfile
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Case:
    """One malformed file: ``contactmp solve`` on it must exit 2 with an error naming ``field``."""

    name: str
    filename: str
    field: str
    what: str
    write: Callable[[Path], Any] = field(repr=False, compare=False)
    env: dict[str, str] = field(default_factory=dict)


class _Trap:
    """Unpickling this creates the file ``marker`` (``builtins.open`` is what the pickle calls)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):  # type: ignore[override]
        return (open, (self.marker, "w"))


#: the file a pickle in the corpus creates if anything unpickles it (relative to the corpus folder)
UNPICKLED_MARKER = "UNPICKLED"
#: the file the corpus' shared library creates when it is loaded
LIBRARY_MARKER = "LIBRARY_LOADED"


# --------------------------------------------------------------------------------------------
# .npz helpers


def _npy(arr: np.ndarray) -> bytes:
    buf = BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _npy_header(shape: tuple[int, ...], descr: str = "<f8", version: tuple[int, int] = (1, 0)) -> bytes:
    buf = BytesIO()
    d = {"descr": descr, "fortran_order": False, "shape": shape}
    if version == (1, 0):
        np.lib.format.write_array_header_1_0(buf, d)
    else:
        np.lib.format.write_array_header_2_0(buf, d)
    return buf.getvalue()


def _zip(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        with zipfile.ZipFile(path, "w", compression) as zf:
            for name, data in members.items():
                zf.writestr(name.split("#")[0], data)  # "M.npy#2": a second member named M.npy
    return path


def _patch_directory(path: Path, member: str, *, file_size: int | None = None,
                     compress_size: int | None = None, flags: int | None = None) -> Path:
    """Rewrite fields of ``member``'s central-directory entry (what zipfile trusts)."""
    data = bytearray(path.read_bytes())
    pos = data.find(b"PK\x01\x02")
    while pos >= 0:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46:pos + 46 + name_len].decode() == member:
            if flags is not None:
                struct.pack_into("<H", data, pos + 8, flags)
            if compress_size is not None:
                struct.pack_into("<L", data, pos + 20, compress_size)
            if file_size is not None:
                struct.pack_into("<L", data, pos + 24, file_size)
            local = struct.unpack_from("<L", data, pos + 42)[0]
            if flags is not None:
                struct.pack_into("<H", data, local + 6, flags)
            path.write_bytes(bytes(data))
            return path
        pos = data.find(b"PK\x01\x02", pos + 4)
    raise KeyError(member)


def _npz(path: Path, **arrays: np.ndarray) -> Path:
    return _zip(path, {f"{k}.npy": _npy(np.asarray(v)) for k, v in arrays.items()})


# --------------------------------------------------------------------------------------------
# FCLIB HDF5 helpers


def _fclib(path: Path, edit: Callable[[Any], None] | None = None, nc: int = 2) -> Path:
    """A valid FCLIB local problem (W = I in compressed rows, q = (-1, 0, 0) per contact), then ``edit``."""
    import h5py

    m = 3 * nc
    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_local")
        g["spacedim"] = np.array([3], np.int32)
        w = g.create_group("W")
        for key, val in (("m", m), ("n", m), ("nz", -2), ("nzmax", m)):
            w[key] = np.array([val], np.int32)
        w["p"] = np.arange(m + 1, dtype=np.int32)
        w["i"] = np.arange(m, dtype=np.int32)
        w["x"] = np.ones(m)
        v = g.create_group("vectors")
        v["q"] = np.tile([-1.0, 0.0, 0.0], nc)
        v["mu"] = np.full(nc, 0.5)
        if edit is not None:
            edit(f)
    return path


def _replace(key: str, value: Any) -> Callable[[Any], None]:
    def edit(f: Any) -> None:
        del f[key]
        f[key] = value
    return edit


def _delete(key: str) -> Callable[[Any], None]:
    def edit(f: Any) -> None:
        del f[key]
    return edit


# --------------------------------------------------------------------------------------------
# NOSBENCH helpers


@functools.lru_cache(maxsize=1)
def _nosbench_base() -> dict[str, Any]:
    """A tiny NOSBENCH MPCC: min (w0 - 1)^2 + (w1 - 1)^2, 0 <= w0 _|_ w1 >= 0, one constraint."""
    import casadi as ca

    w, p = ca.SX.sym("w", 2), ca.SX.sym("p", 0)
    fun = {
        "g_fun": ca.Function("g", [w, p], [w[0] + w[1]]),
        "G_fun": ca.Function("G", [w, p], [w[0]]),
        "H_fun": ca.Function("H", [w, p], [w[1]]),
        "objective_fun": ca.Function("f", [w, p], [(w[0] - 1) ** 2 + (w[1] - 1) ** 2]),
    }
    d: dict[str, Any] = {k: f.serialize() for k, f in fun.items()}
    d.update(w0=[0.5, 0.5], lbw=[0.0, 0.0], ubw=[10.0, 10.0], p0=[], lbg=[0.0], ubg=[5.0])
    return d


def _external_function_text(folder: Path) -> str | None:
    """A serialized CasADi External (a compiled shared library), or None without a C compiler.

    Built in a subprocess (which loads the library once); the library's constructor creates
    :data:`LIBRARY_MARKER`, which is removed afterwards, so that a load by the CLI would show.
    """
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    build = folder / "_external"
    build.mkdir(exist_ok=True)
    marker = folder / LIBRARY_MARKER
    script = textwrap.dedent(f"""
        import casadi as ca, json, subprocess
        w, p = ca.SX.sym("w", 2), ca.SX.sym("p", 0)
        ca.Function("g", [w, p], [w[0] + w[1]]).generate("g.c")
        src = open("g.c").read() + '''
        #include <stdio.h>
        __attribute__((constructor)) static void mark(void) {{
            FILE* f = fopen("{marker}", "w"); if (f) fclose(f);
        }}
        '''
        open("g.c", "w").write(src)
        subprocess.run([{cc!r}, "-shared", "-fPIC", "g.c", "-o", "libg.so"], check=True)
        print(json.dumps(ca.external("g", "./libg.so").serialize()))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=build, capture_output=True, text=True,
                         check=True, timeout=120)
    marker.unlink(missing_ok=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------
# the corpus

_OK_LCP_DAT = "2\n0\n2\n2\n2\t2\n2 1\n1 2\n-1\n-1\n"
_OK_FC3D_DAT = "3\n1\n0\n3\n3\n3\t3\n1 0 0\n0 1 0\n0 0 1\n-1 0 0\n0.5\n"
_SBM_HEAD = "3\n2\n1\n6\n6\n"

#: why the cases whose messages hold '[/...]' crash the CLI today (cli.py is not the readers' file)

def write_corpus(folder: Path) -> dict[str, tuple[Case, Path]]:
    """Write every case of :func:`corpus_cases` into ``folder``: ``{name: (case, path)}``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for case in corpus_cases(folder):
        path = folder / case.filename
        case.write(path)
        out[case.name] = (case, path)
    return out


def corpus_cases(folder: Path | None = None) -> list[Case]:
    """The malformed cases (nothing is written). ``folder`` is where a pickle's marker goes if
    anything unpickles it (:data:`UNPICKLED_MARKER`; the current folder when None)."""
    cases: list[Case] = []
    marker = str(Path(folder or ".") / UNPICKLED_MARKER)

    def add(name: str, fld: str, what: str, write: Callable[[Path], Any], suffix: str,
            env: dict[str, str] | None = None) -> None:
        cases.append(Case(name, f"{name}{suffix}", fld, what, write, env or {}))

    def text(content: str | bytes) -> Callable[[Path], Any]:
        return lambda p: p.write_bytes(content.encode() if isinstance(content, str) else content)

    eye2, ones2 = np.eye(2), np.array([-1.0, -1.0])

    # ---- any file
    add("empty", "path", "an empty file", text(b""), ".npz")
    add("garbage", "path", "random bytes", text(np.random.default_rng(0).bytes(4096)), ".npz")
    add("pickle_file", "path", "a pickle (of a dict holding an object that creates a file when unpickled)",
        text(pickle.dumps({"M": _Trap(marker), "q": [1.0]})), ".npz")
    add("bare_npy", "path", "a bare .npy, not an archive", lambda p: p.write_bytes(_npy(eye2)), ".npz")

    # ---- LCP .npz: values, shapes, dtypes
    add("npz_nan_M", "M", "NaN in M", lambda p: _npz(p, M=np.array([[1.0, np.nan], [0, 1]]), q=ones2), ".npz")
    add("npz_inf_q", "q", "inf in q", lambda p: _npz(p, M=eye2, q=np.array([1.0, np.inf])), ".npz")
    add("npz_M_not_square", "M", "M is 2 x 3", lambda p: _npz(p, M=np.ones((2, 3)), q=ones2), ".npz")
    add("npz_M_rank3", "M", "M has three dimensions", lambda p: _npz(p, M=np.ones((2, 2, 2)), q=ones2), ".npz")
    add("npz_M_empty", "M", "M is 0 x 0", lambda p: _npz(p, M=np.ones((0, 0)), q=np.ones(0)), ".npz")
    add("npz_q_length", "q", "q has 3 entries for a 2 x 2 M", lambda p: _npz(p, M=eye2, q=np.ones(3)), ".npz")
    add("npz_q_missing", "q", "no array q", lambda p: _npz(p, M=eye2), ".npz")
    add("npz_complex_M", "M", "complex M", lambda p: _npz(p, M=eye2 * (1 + 1j), q=ones2), ".npz")
    add("npz_string_q", "q", "q holds strings", lambda p: _npz(p, M=eye2, q=np.array(["a", "b"])), ".npz")
    add("npz_bytes_M", "M", "M holds byte strings", lambda p: _npz(p, M=np.array([[b"1", b"0"], [b"0", b"1"]]),
                                                                   q=ones2), ".npz")
    add("npz_object_M", "M", "M is an object array (a pickle inside the .npy)",
        lambda p: _npz(p, M=np.array([_Trap(marker), 1.0], dtype=object), q=ones2), ".npz")
    add("npz_structured_M", "M", "M is a structured array",
        lambda p: _npz(p, M=np.zeros((2, 2), dtype=[("a", "<f8"), ("b", "<i4")]), q=ones2), ".npz")
    add("npz_datetime_q", "q", "q holds datetimes",
        lambda p: _npz(p, M=eye2, q=np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]")), ".npz")
    add("npz_member_is_pickle", "M", "M.npy holds a raw pickle",
        lambda p: _zip(p, {"M.npy": pickle.dumps(_Trap(marker)), "q.npy": _npy(ones2)}), ".npz")
    add("npz_member_not_npy", "M", "M.npy holds text",
        lambda p: _zip(p, {"M.npy": b"1 0\n0 1\n", "q.npy": _npy(ones2)}), ".npz")
    add("npz_neither_M_nor_W", "path", "an archive holding A and b",
        lambda p: _npz(p, A=eye2, b=ones2), ".npz")
    add("npz_member_named_markup", "path", "an archive whose only member is named '[/x]'",
        lambda p: _npz(p, **{"[/x]": eye2}), ".npz")

    # ---- .npz: headers and zip members that lie
    add("npz_huge_header", "M", "M.npy's header declares 200000 x 200000 float64 (298 GiB) in a 1 MiB file",
        lambda p: _zip(p, {"M.npy": _npy_header((200000, 200000)) + bytes(1 << 20),
                           "q.npy": _npy(np.ones(200000))}), ".npz")
    add("npz_huge_header_v2", "M", "the same lie in a version 2.0 header",
        lambda p: _zip(p, {"M.npy": _npy_header((200000, 200000), version=(2, 0)) + bytes(64),
                           "q.npy": _npy(np.ones(2))}), ".npz")
    add("npz_header_short_data", "M", "M.npy declares 2 x 2 float64 (32 bytes) but holds 16",
        lambda p: _zip(p, {"M.npy": _npy_header((2, 2)) + bytes(16), "q.npy": _npy(ones2)}), ".npz")
    add("npz_header_long_data", "M", "M.npy declares 2 x 2 float64 but holds 64 bytes",
        lambda p: _zip(p, {"M.npy": _npy_header((2, 2)) + bytes(64), "q.npy": _npy(ones2)}), ".npz")
    add("npz_header_garbage", "M", "M.npy's header is not a dict literal",
        lambda p: _zip(p, {"M.npy": b"\x93NUMPY\x01\x00\x10\x00" + b"not a dict!!   \n" + bytes(32),
                           "q.npy": _npy(ones2)}), ".npz")
    add("npz_header_negative_shape", "M", "M.npy's header declares the shape (-2, -2)",
        lambda p: _zip(p, {"M.npy": _npy_header((2, 2)).replace(b"(2, 2)", b"(-2,-2)") + bytes(32),
                           "q.npy": _npy(ones2)}), ".npz")
    add("npz_header_version_3", "M", "M.npy is .npy format version 3.0",
        lambda p: _zip(p, {"M.npy": _npy(eye2).replace(b"\x93NUMPY\x01\x00", b"\x93NUMPY\x03\x00", 1),
                           "q.npy": _npy(ones2)}), ".npz")
    add("npz_header_length_huge", "M", "M.npy's header length field says 4 GiB (version 2.0)",
        lambda p: _zip(p, {"M.npy": b"\x93NUMPY\x02\x00\xff\xff\xff\xff" + bytes(64), "q.npy": _npy(ones2)}),
        ".npz")
    add("npz_directory_lies_size", "M", "the zip directory says the stored M.npy is 1 GiB uncompressed",
        lambda p: _patch_directory(_npz(p, M=eye2, q=ones2), "M.npy", file_size=2**30), ".npz")
    add("npz_directory_past_end", "M", "the zip directory says M.npy stores 1 GiB (beyond the file's end)",
        lambda p: _patch_directory(_npz(p, M=eye2, q=ones2), "M.npy", file_size=2**30, compress_size=2**30),
        ".npz")

    def deflate_bomb(p: Path) -> None:
        # 2000 x 2000 float64 of zeros declared honestly, but the directory says 32 GiB
        _zip(p, {"M.npy": _npy(np.zeros((2, 2))), "q.npy": _npy(ones2)}, zipfile.ZIP_DEFLATED)
        _patch_directory(p, "M.npy", file_size=2**32 - 1)

    add("npz_deflate_ratio", "M", "a deflated M.npy whose declared size is beyond deflate's ratio", deflate_bomb,
        ".npz")

    def deflate_short(p: Path) -> None:
        # incompressible data: 1 MiB really stored, the header and the directory both claim 2 MiB
        data = np.random.default_rng(1).bytes(1 << 20)
        n = 512  # 512 x 512 float64 = 2 MiB
        _zip(p, {"M.npy": _npy_header((n, n)) + data, "q.npy": _npy(np.ones(n))}, zipfile.ZIP_DEFLATED)
        _patch_directory(p, "M.npy", file_size=len(_npy_header((n, n))) + 8 * n * n)

    add("npz_deflate_short", "M", "a deflated M.npy that decompresses to half its declared size", deflate_short,
        ".npz")

    def bad_crc(p: Path) -> None:
        _zip(p, {"M.npy": _npy(eye2), "q.npy": _npy(ones2)})
        data = bytearray(p.read_bytes())
        at = data.find(_npy(eye2)) + len(_npy(eye2)) - 8
        data[at] ^= 0xFF  # flip a byte of M's data: the CRC no longer matches
        p.write_bytes(bytes(data))

    add("npz_bad_crc", "M", "a byte of M.npy's data changed (CRC mismatch)", bad_crc, ".npz")
    add("npz_encrypted", "M", "M.npy flagged as encrypted",
        lambda p: _patch_directory(_npz(p, M=eye2, q=ones2), "M.npy", flags=0x1), ".npz")
    add("npz_bzip2", "M", "M.npy compressed with bzip2 (not what numpy writes)",
        lambda p: _zip(p, {"M.npy": _npy(eye2), "q.npy": _npy(ones2)}, zipfile.ZIP_BZIP2), ".npz")
    add("npz_duplicate_member", "M", "two members named M.npy",
        lambda p: _zip(p, {"M.npy": _npy(eye2), "M.npy#2": _npy(np.ones((3, 3))), "q.npy": _npy(ones2)}), ".npz")
    add("npz_truncated", "path", "an archive cut in half",
        lambda p: p.write_bytes(_npz(p, M=np.eye(20), q=np.ones(20)).read_bytes()[:1800]), ".npz")
    add("npz_directory_huge", "path", "an archive with 3000 members (a 160 KiB zip directory)",
        lambda p: _zip(p, {"M.npy": _npy(eye2), "q.npy": _npy(ones2),
                           **{f"pad{k:05d}.npy": b"" for k in range(3000)}}), ".npz")
    add("npz_over_cap", "M", "a 200 x 200 M (320 KiB as float64) with the cap lowered to 64 KiB",
        lambda p: np.savez_compressed(p, M=np.zeros((200, 200)), q=np.zeros(200)), ".npz",
        env={"CONTACTMP_MAX_BYTES": "64K"})
    add("npz_bad_cap_setting", "CONTACTMP_MAX_BYTES", "CONTACTMP_MAX_BYTES=lots",
        lambda p: _npz(p, M=eye2, q=ones2), ".npz", env={"CONTACTMP_MAX_BYTES": "lots"})

    # ---- fc3d .npz
    eye3, q3 = np.eye(3), np.array([-1.0, 0.0, 0.0])
    add("fc3d_npz_lying_nc", "nc", "nc = 2 for one contact",
        lambda p: _npz(p, W=eye3, q=q3, mu=np.array([0.5]), nc=np.array(2)), ".npz")
    add("fc3d_npz_nc_not_integer", "nc", "nc = 1.5", lambda p: _npz(p, W=eye3, q=q3, mu=np.array([0.5]),
                                                                  nc=np.array(1.5)), ".npz")
    add("fc3d_npz_nc_vector", "nc", "nc holds two numbers",
        lambda p: _npz(p, W=eye3, q=q3, mu=np.array([0.5]), nc=np.array([1, 1])), ".npz")
    add("fc3d_npz_negative_mu", "mu", "mu = -0.5", lambda p: _npz(p, W=eye3, q=q3, mu=np.array([-0.5])), ".npz")
    add("fc3d_npz_nan_mu", "mu", "mu = NaN", lambda p: _npz(p, W=eye3, q=q3, mu=np.array([np.nan])), ".npz")
    add("fc3d_npz_mu_count", "mu", "two mu for one contact", lambda p: _npz(p, W=eye3, q=q3, mu=np.ones(2)), ".npz")
    add("fc3d_npz_W_not_3nc", "W", "W is 4 x 4", lambda p: _npz(p, W=np.eye(4), q=np.ones(4), mu=np.ones(1)), ".npz")
    add("fc3d_npz_complex_W", "W", "complex W", lambda p: _npz(p, W=eye3 * 1j, q=q3, mu=np.ones(1)), ".npz")
    add("fc3d_npz_huge_W_header", "W", "W.npy's header declares 300000 x 300000",
        lambda p: _zip(p, {"W.npy": _npy_header((300000, 300000)) + bytes(4096), "q.npy": _npy(q3),
                           "mu.npy": _npy(np.ones(1))}), ".npz")

    # ---- Siconos LCP .dat
    add("dat_truncated_q", "q", "the file ends inside q", text(_OK_LCP_DAT.rsplit("-1", 1)[0]), ".dat")
    add("dat_truncated_M", "M", "the file ends inside M", text("2\n0\n2\n2\n2\t2\n2 1\n1\n"), ".dat")
    add("dat_nan", "q", "NaN in q", text(_OK_LCP_DAT.replace("-1\n-1", "-1\nnan")), ".dat")
    add("dat_inf", "M", "inf in M", text(_OK_LCP_DAT.replace("2 1\n", "inf 1\n")), ".dat")
    add("dat_overflow", "M", "1e400 (overflows to inf) in M", text(_OK_LCP_DAT.replace("2 1\n", "1e400 1\n")),
        ".dat")
    add("dat_not_a_number", "M", "a word in M", text(_OK_LCP_DAT.replace("2 1\n", "2 x\n")), ".dat")
    add("dat_markup_token", "M", "a token '[/x]' in M", text(_OK_LCP_DAT.replace("2 1\n", "2 [/x]\n")), ".dat")
    add("dat_huge_header", "M", "n = 10^12: a 10^12 x 10^12 M announced in a 60-byte file",
        text("1000000000000\n0\n1000000000000\n1000000000000\n1000000000000 1000000000000\n1 2\n"), ".dat")
    add("dat_header_beyond_file", "M", "n = 3000 (72 MiB as float64) announced in a short file",
        text("3000\n0\n3000\n3000\n3000 3000\n1 2 3\n"), ".dat")
    add("dat_over_cap", "M", "a 100 x 100 M of zeros (80 KiB as float64, 20 KiB of text) with a 64 KiB cap",
        text("100\n0\n100\n100\n100 100\n" + "0 " * 10000 + "\n" + "0 " * 100), ".dat",
        env={"CONTACTMP_MAX_BYTES": "64K"})
    add("dat_file_over_cap", "path", "a 100 KiB text file with a 64 KiB cap",
        text("2\n0\n2\n2\n2\t2\n2 1\n1 2\n-1\n-1\n" + "% comment\n" * 10000), ".dat",
        env={"CONTACTMP_MAX_BYTES": "64K"})
    add("dat_dense_block_size", "M", "the dense block repeats a different size",
        text("2\n0\n2\n2\n3\t3\n2 1\n1 2\n-1 -1\n"), ".dat")
    add("dat_numbers_after_q", "q", "more numbers after q (a wrong size line)", text(_OK_LCP_DAT + "5 6\n"), ".dat")
    add("dat_sparse_block_lcp", "storage", "an LCP in sparse-block storage (not read)", text("2\n1\n2\n2\n"), ".dat")
    add("dat_csparse_fc3d", "storage", "an fc3d W in Siconos' csparse storage (2, not read)",
        text(_OK_FC3D_DAT.replace("\n0\n3\n3\n", "\n2\n3\n3\n")), ".dat")
    add("dat_huge_integer", "cols", "a 5000-digit size",
        text("2\n0\n2\n2\n2\t" + "9" * 5000 + "\n2 1\n1 2\n-1\n-1\n"), ".dat")

    # ---- Siconos fc3d .dat (dense and sparse-block)
    add("fc3d_dat_truncated", "mu", "the file ends before mu", text(_OK_FC3D_DAT.replace("0.5\n", "")), ".dat")
    add("fc3d_dat_negative_mu", "mu", "mu = -0.5", text(_OK_FC3D_DAT.replace("0.5\n", "-0.5\n")), ".dat")
    add("fc3d_dat_nan_mu", "mu", "mu = nan", text(_OK_FC3D_DAT.replace("0.5\n", "nan\n")), ".dat")
    add("fc3d_dat_huge_nc", "W", "nc = 10^11 announced in a short file",
        text("3\n100000000000\n0\n300000000000\n300000000000\n300000000000 300000000000\n1 2 3\n"), ".dat")
    add("fc3d_sbm_huge_dims", "W", "a sparse-block W of 3*10^6 x 3*10^6 (72 TB dense)",
        text("3\n1000000\n1\n3000000\n3000000\n1\n1\n1\n3000000\n3000000\n2\n1\n0 1\n0\n0\n1\n"), ".dat")
    add("fc3d_sbm_sizes_decrease", "blocksize0", "cumulative block sizes 3, 3",
        text(_SBM_HEAD + "1\n2\n2\n3 3\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 9 + "\n"), ".dat")
    add("fc3d_sbm_sizes_short", "blocksize0", "block sizes that cover 5 of 6 rows",
        text(_SBM_HEAD + "1\n2\n2\n3 5\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 9 + "\n"), ".dat")
    add("fc3d_sbm_zero_block", "blocksize1", "a block column of size 0",
        text(_SBM_HEAD + "1\n2\n2\n3 6\n0 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 9 + "\n"), ".dat")
    add("fc3d_sbm_block_column", "index2_data", "a block in block column 5 of 2",
        text(_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n1\n0 1 1\n5\n0\n" + "1 " * 9 + "\n"), ".dat")
    add("fc3d_sbm_huge_nbblocks", "nbblocks", "nbblocks = 10^9 in a short file",
        text(_SBM_HEAD + "1000000000\n2\n2\n3 6\n3 6\n3\n1\n"), ".dat")
    add("fc3d_sbm_too_many_blocks", "nbblocks", "nbblocks = 5 for a 2 x 2 grid of blocks",
        text(_SBM_HEAD + "5\n2\n2\n3 6\n3 6\n3\n5\n0 1 1\n0\n0\n" + "1 " * 60 + "\n"), ".dat")
    add("fc3d_sbm_huge_blocknumber", "blocknumber0", "blocknumber0 = 10^9 for 6 rows",
        text(_SBM_HEAD + "1\n1000000000\n2\n"), ".dat")
    add("fc3d_sbm_filled1", "filled1", "filled1 = 999999 for 2 block rows",
        text(_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n999999\n1\n"), ".dat")
    add("fc3d_sbm_truncated_block", "block", "the file ends inside a block",
        text(_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 8 + "\n"), ".dat")
    add("fc3d_sbm_negative_nbblocks", "nbblocks", "nbblocks = -1", text(_SBM_HEAD + "-1\n"), ".dat")

    # ---- FCLIB HDF5
    add("h5_no_fclib_local", "fclib_local", "no group fclib_local", lambda p: _fclib(p, _delete("fclib_local")),
        ".hdf5")
    add("h5_fclib_local_dataset", "fclib_local", "fclib_local is a dataset",
        lambda p: _fclib(p, _replace("fclib_local", np.ones(3))), ".hdf5")
    add("h5_no_vectors", "vectors", "no group vectors", lambda p: _fclib(p, _delete("fclib_local/vectors")), ".hdf5")
    add("h5_W_dataset", "W", "W is a dataset, not a sparse-matrix group",
        lambda p: _fclib(p, _replace("fclib_local/W", np.eye(6))), ".hdf5")
    add("h5_no_spacedim", "spacedim", "no spacedim", lambda p: _fclib(p, _delete("fclib_local/spacedim")), ".hdf5")
    add("h5_spacedim_2", "spacedim", "spacedim = 2",
        lambda p: _fclib(p, _replace("fclib_local/spacedim", np.array([2], np.int32))), ".hdf5")
    add("h5_q_wrong_length", "q", "q has 5 entries for 6 rows",
        lambda p: _fclib(p, _replace("fclib_local/vectors/q", np.ones(5))), ".hdf5")
    add("h5_q_matrix", "q", "q is 6 x 2", lambda p: _fclib(p, _replace("fclib_local/vectors/q", np.ones((6, 2)))),
        ".hdf5")
    add("h5_q_group", "q", "q is a group",
        lambda p: _fclib(p, lambda f: [_delete("fclib_local/vectors/q")(f), f.create_group("fclib_local/vectors/q")]),
        ".hdf5")
    add("h5_q_null", "q", "q has a null dataspace",
        lambda p: _fclib(p, lambda f: [_delete("fclib_local/vectors/q")(f),
                                       f["fclib_local/vectors"].create_dataset("q", data=_h5_empty())]), ".hdf5")
    add("h5_mu_complex", "mu", "complex mu",
        lambda p: _fclib(p, _replace("fclib_local/vectors/mu", np.ones(2) * 1j)), ".hdf5")
    add("h5_mu_strings", "mu", "mu holds strings",
        lambda p: _fclib(p, _replace("fclib_local/vectors/mu", np.array([b"a", b"b"]))), ".hdf5")
    add("h5_mu_negative", "mu", "mu = -1", lambda p: _fclib(p, _replace("fclib_local/vectors/mu", -np.ones(2))),
        ".hdf5")
    add("h5_W_not_square", "W", "m = 6, n = 3",
        lambda p: _fclib(p, _replace("fclib_local/W/n", np.array([3], np.int32))), ".hdf5")
    add("h5_m_float", "W/m", "m stored as a float", lambda p: _fclib(p, _replace("fclib_local/W/m", np.array([6.0]))),
        ".hdf5")
    add("h5_nz_unknown", "W/nz", "nz = -3", lambda p: _fclib(p, _replace("fclib_local/W/nz", np.array([-3], np.int32))),
        ".hdf5")
    add("h5_p_decreasing", "W/p", "row pointers that decrease",
        lambda p: _fclib(p, _replace("fclib_local/W/p", np.array([0, 5, 3, 4, 5, 6, 6], np.int32))), ".hdf5")
    add("h5_p_wrong_length", "W/p", "3 row pointers for 6 rows",
        lambda p: _fclib(p, _replace("fclib_local/W/p", np.array([0, 3, 6], np.int32))), ".hdf5")
    add("h5_p_float", "W/p", "row pointers stored as floats",
        lambda p: _fclib(p, _replace("fclib_local/W/p", np.arange(7.0))), ".hdf5")
    add("h5_i_out_of_range", "W/i", "a column index 12 in a 6 x 6 W",
        lambda p: _fclib(p, _replace("fclib_local/W/i", np.array([0, 1, 12, 3, 4, 5], np.int32))), ".hdf5")
    add("h5_i_negative", "W/i", "a column index -1",
        lambda p: _fclib(p, _replace("fclib_local/W/i", np.array([0, 1, -1, 3, 4, 5], np.int32))), ".hdf5")
    add("h5_x_missing", "W/x", "no W/x", lambda p: _fclib(p, _delete("fclib_local/W/x")), ".hdf5")
    add("h5_x_nan", "W", "NaN in W/x", lambda p: _fclib(p, _replace("fclib_local/W/x", np.array([1, np.nan, 1, 1, 1, 1]))),
        ".hdf5")
    add("h5_triplets_beyond_stored", "W/p", "nz = 10^6 triplets announced, 6 stored",
        lambda p: _fclib(p, _replace("fclib_local/W/nz", np.array([10**6], np.int32))), ".hdf5")

    def huge_x(f: Any) -> None:
        del f["fclib_local/W/x"]
        f["fclib_local/W"].create_dataset("x", shape=(10**10,), dtype="f8", chunks=(10**6,))

    add("h5_huge_declared_x", "W/x", "W/x declares 10^10 entries (80 GB), nothing stored",
        lambda p: _fclib(p, huge_x), ".hdf5")

    def huge_q(f: Any) -> None:
        del f["fclib_local/vectors/q"]
        f["fclib_local/vectors"].create_dataset("q", shape=(10**9,), dtype="f8", chunks=(10**6,))

    add("h5_huge_declared_q", "q", "q declares 10^9 entries, nothing stored", lambda p: _fclib(p, huge_q), ".hdf5")
    add("h5_huge_m", "W", "m = n = 3*10^6: a 72 TB dense W",
        lambda p: _fclib(p, lambda f: [_replace("fclib_local/W/m", np.array([3 * 10**6], np.int32))(f),
                                       _replace("fclib_local/W/n", np.array([3 * 10**6], np.int32))(f)]), ".hdf5")

    def soft_link(f: Any) -> None:
        import h5py

        del f["fclib_local/vectors/mu"]
        f["fclib_local/vectors/mu"] = h5py.SoftLink("/fclib_local/vectors/q")

    add("h5_soft_link", "mu", "mu is a soft link to q", lambda p: _fclib(p, soft_link), ".hdf5")

    def external_link(f: Any) -> None:
        import h5py

        del f["fclib_local/vectors"]
        f["fclib_local/vectors"] = h5py.ExternalLink("/nonexistent/other.hdf5", "/vectors")

    add("h5_external_link_group", "vectors", "vectors is an external link to another file",
        lambda p: _fclib(p, external_link), ".hdf5")
    add("h5_truncated", "path", "an HDF5 file cut short",
        lambda p: p.write_bytes(_fclib(p).read_bytes()[:1500]), ".hdf5")
    add("h5_signature_then_garbage", "path", "the HDF5 signature then zeros",
        text(b"\x89HDF\r\n\x1a\n" + bytes(2048)), ".hdf5")

    # ---- NOSBENCH CasADi .json (a valid tiny problem with one field changed)
    def js(**changes: Any) -> Callable[[Path], Any]:
        def write(p: Path) -> None:
            d = {k: v for k, v in _nosbench_base().items() if k not in changes or changes[k] is not _DROP}
            d.update({k: v for k, v in changes.items() if v is not _DROP})
            p.write_text(json.dumps(d))
        return write

    def external(p: Path) -> None:
        js(g_fun=_external_function_text(p.parent))(p)

    if shutil.which("gcc") or shutil.which("cc"):
        add("json_external_g_fun", "g_fun", "g_fun is a CasADi External (a compiled shared library)", external,
            ".json")
    add("json_G_fun_not_casadi", "G_fun", "G_fun is not serialized CasADi", js(G_fun="not casadi!"), ".json")
    add("json_H_fun_number", "H_fun", "H_fun is a number", js(H_fun=3), ".json")
    add("json_missing_objective", "objective_fun", "no objective_fun", js(objective_fun=_DROP), ".json")
    add("json_nan_w0", "w0", "NaN in w0", js(w0=[float("nan"), 0.5]), ".json")
    add("json_w0_strings", "w0", "w0 holds strings", js(w0=["a", "b"]), ".json")
    add("json_w0_huge_int", "w0", "w0 holds a 400-digit integer (overflows float64)", js(w0=[10**400, 0.5]),
        ".json")
    add("json_lbw_above_ubw", "lbw", "lbw > ubw", js(lbw=[20.0, 0.0]), ".json")
    add("json_ubw_length", "ubw", "ubw has 3 entries for 2 variables", js(ubw=[1.0, 1.0, 1.0]), ".json")
    add("json_garbage", "path", "text that starts with '{' but is not JSON", text("{not json at all"), ".json")
    add("json_deep_nesting", "path", "an array nested 100000 deep",
        text('{"w0": ' + "[" * 100000 + "]" * 100000 + "}"), ".json")
    add("json_huge_int", "path", "a 5000-digit integer (beyond Python's int digit limit)",
        text('{"w0": [' + "1" * 5000 + "]}"), ".json")
    add("json_not_utf8", "path", "bytes that are not UTF-8", text(b'{"w0": "\xff\xfe"}'), ".json")
    add("json_oversized", "path", "a 100 KiB JSON file with the cap lowered to 1 MiB (JSON limit 32 KiB)",
        js(comment="x" * 100_000), ".json", env={"CONTACTMP_MAX_BYTES": "1M"})
    return cases


#: a marker for js(): leave the field out
_DROP = object()


def _h5_empty() -> Any:
    import h5py

    return h5py.Empty("f8")


def write_legal_extremes(folder: Path) -> list[tuple[str, Path]]:
    """Problems that are legal but extreme: they load, and the solve's status says what happened."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []

    def add(name: str, write: Callable[[Path], Any], suffix: str = ".npz") -> None:
        path = folder / f"{name}{suffix}"
        write(path)
        out.append((name, path))

    add("lcp_indefinite", lambda p: _npz(p, M=np.array([[-1.0, 2.0], [2.0, -1.0]]), q=np.array([-1.0, -1.0])))
    add("lcp_negative_definite", lambda p: _npz(p, M=-np.eye(2), q=np.array([1.0, -1.0])))
    add("lcp_near_float_max", lambda p: _npz(p, M=np.array([[1e300, 1.0], [1.0, 1e300]]), q=np.array([-1e300, 1.0])))
    add("lcp_subnormal", lambda p: _npz(p, M=np.array([[5e-324, 0.0], [0.0, 1e-308]]), q=np.array([-1.0, 1.0])))
    add("lcp_int_dtype", lambda p: _npz(p, M=np.array([[2, 1], [1, 2]], np.int8), q=np.array([-1, -1], np.int64)))
    add("lcp_fortran_big_endian", lambda p: _npz(p, M=np.asfortranarray(np.array([[2.0, 1.0], [0.0, 2.0]], ">f8")),
                                                 q=np.array([-1.0, -1.0], ">f8")))
    add("lcp_compressed", lambda p: np.savez_compressed(p, M=np.eye(300) * 2, q=-np.ones(300)))
    add("lcp_dat_1e300", lambda p: p.write_text("2\n0\n2\n2\n2\t2\n1e300 1\n1 1e300\n-1e300\n1\n"), ".dat")
    W = np.eye(3)
    W[0, 0] = -1.0
    add("fc3d_indefinite_W", lambda p: _npz(p, W=W, q=np.array([-1.0, 0.5, 0.2]), mu=np.array([0.5])))
    add("fc3d_near_float_max", lambda p: _npz(p, W=np.eye(3) * 1e300, q=np.array([-1e300, 1e300, 0.0]),
                                              mu=np.array([1e300])))
    add("fc3d_zero_mu_scalar", lambda p: _npz(p, W=np.eye(3), q=np.array([-1.0, 0.0, 0.0]), mu=np.array(0.0)))
    add("fc3d_hdf5_indefinite", lambda p: _fclib(p, _replace("fclib_local/W/x", -np.ones(6))), ".hdf5")
    return out


if __name__ == "__main__":  # pragma: no cover
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "malformed-corpus")
    for case, path in write_corpus(target).values():
        print(f"{path.name:40s} {case.field:20s} {case.what}")
    for name, path in write_legal_extremes(target / "legal"):
        print(f"{path.name:40s} {'(loads)':20s} {name}")
