"""Problem readers: same arrays as the .npz versions, field-named errors, no pickle."""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import LCP_FORMATS, load_lcp, sniff_format
from contactmp.solvers.lcp.problem import lcp_residual

RAW_LCPS = ["lcp_CPS_1", "lcp_mmc"]


def _field(excinfo: pytest.ExceptionInfo[InputError]) -> str:
    return excinfo.value.field


@pytest.mark.parametrize("name", RAW_LCPS)
def test_siconos_dat_equals_npz(repo_data: Path, name: str) -> None:
    M, q = load_lcp(repo_data / "raw" / f"{name}.dat")
    ref = np.load(repo_data / "lcp" / f"{name}.npz", allow_pickle=False)
    assert M.dtype == np.float64 and q.dtype == np.float64
    assert np.array_equal(M, ref["M"]) and np.array_equal(q, ref["q"])


def test_dense_dat_is_column_major(tmp_path: Path) -> None:
    # M = [[1, 2], [3, 4]] is listed column by column: 1 3 / 2 4.
    p = tmp_path / "p.dat"
    p.write_text("2\n0\n2\n2\n2\t2\n1 3\n2 4\n-1\n-2\n")
    M, q = load_lcp(p)
    assert np.array_equal(M, [[1.0, 2.0], [3.0, 4.0]])
    assert np.array_equal(q, [-1.0, -2.0])
    # Closed form: M z = -q has z = (0, 0.5) >= 0, so it solves the LCP with w = 0.
    assert lcp_residual(M, q, np.array([0.0, 0.5])) == 0.0


def test_all_shared_npz_load_exactly(repo_data: Path) -> None:
    files = sorted((repo_data / "lcp").glob("*.npz"))
    assert len(files) >= 17
    for f in files:
        M, q = load_lcp(f)
        ref = np.load(f, allow_pickle=False)
        assert np.array_equal(M, ref["M"]) and np.array_equal(q, ref["q"]), f.name
        assert M.shape == (q.size, q.size)


def test_content_not_extension_decides(repo_data: Path, tmp_path: Path) -> None:
    dat_named_npz = tmp_path / "really_text.npz"
    shutil.copy(repo_data / "raw" / "lcp_mmc.dat", dat_named_npz)
    npz_named_dat = tmp_path / "really_zip.dat"
    shutil.copy(repo_data / "lcp" / "lcp_mmc.npz", npz_named_dat)
    M1, q1 = load_lcp(dat_named_npz)
    M2, q2 = load_lcp(npz_named_dat)
    assert np.array_equal(M1, M2) and np.array_equal(q1, q2)
    assert sniff_format(dat_named_npz, LCP_FORMATS).name == "siconos-lcp-dat"
    assert sniff_format(npz_named_dat, LCP_FORMATS).name == "npz"


def test_crlf_and_trailing_comment(tmp_path: Path) -> None:
    p = tmp_path / "p.dat"
    p.write_bytes(b"1\r\n0\r\n1\r\n1\r\n1\t1\r\n2.0\r\n-4.0\r\n\r\nz = 2 \xe9t\xe9 42\r\n")
    M, q = load_lcp(p)
    assert M.tolist() == [[2.0]] and q.tolist() == [-4.0]


@pytest.mark.parametrize("name", ["Rover1039.dat", "FC3D_Example1.dat", "Capsules-i125-1213.hdf5"])
def test_other_problem_classes_are_not_lcps(repo_data: Path, name: str) -> None:
    with pytest.raises(InputError) as exc:
        load_lcp(repo_data / "raw" / name)
    assert _field(exc) == "path"
    assert "expected" in str(exc.value)


def test_fc3d_npz_names_missing_array(repo_data: Path) -> None:
    with pytest.raises(InputError) as exc:
        load_lcp(repo_data / "fc3d" / "Rover1039.npz")
    assert _field(exc) == "M" and "missing" in str(exc.value)


@pytest.mark.parametrize("missing", ["M", "q"])
def test_npz_missing_key(tmp_path: Path, missing: str) -> None:
    arrays = {"M": np.eye(2), "q": np.ones(2)}
    del arrays[missing]
    p = tmp_path / "p.npz"
    np.savez(p, **arrays)
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == missing


@pytest.mark.parametrize(
    ("M", "q", "field"),
    [
        (np.ones((2, 3)), np.ones(2), "M"),
        (np.eye(2), np.ones(3), "q"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2), "M"),
        (np.eye(2) * (1 + 1j), np.ones(2), "M"),
        (np.eye(2), np.array(["a", "b"]), "q"),
    ],
)
def test_npz_malformed_arrays(tmp_path: Path, M: np.ndarray, q: np.ndarray, field: str) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, M=M, q=q)
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == field


class _Trap:
    """Unpickling this creates the file ``marker``: proof that something was unpickled."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):  # type: ignore[override]
        return (open, (self.marker, "w"))


def test_npz_with_pickle_is_refused_and_not_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    p = tmp_path / "evil.npz"
    np.savez(p, M=np.array([_Trap(str(marker))], dtype=object), q=np.ones(1))
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == "M" and "pickle" in str(exc.value)
    assert not marker.exists()


def test_raw_pickle_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    p = tmp_path / "evil.npz"
    p.write_bytes(pickle.dumps({"M": _Trap(str(marker)), "q": [1.0]}))
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == "path"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("2\n0\n2\n2\n2\t2\n1 1\n1 1\n-1\n", "q"),  # truncated q
        ("2\n0\n2\n2\n2\t2\n1 1\n1\n", "M"),  # truncated M
        ("2\n0\n2\n2\n2\t2\n1 x\n1 1\n-1 -1\n", "M"),  # not a number
        ("2\n0\n2\n2\n2\t2\n1 1\n1 1\n-1 nan\n", "q"),  # NaN
        ("2\n0\n2\n2\n3\t3\n1 1\n1 1\n-1 -1\n", "M"),  # dense block size disagrees
        ("2\n0\n2\n2\n2\tx\n1 1\n1 1\n-1 -1\n", "cols"),
        ("2\n1\n2\n2\n", "storage"),  # sparse-block: recognised, refused
    ],
)
def test_dat_malformed_names_field(tmp_path: Path, text: str, field: str) -> None:
    p = tmp_path / "p.dat"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == field, str(exc.value)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"hello world\n",
        b"2\n0\n3\n3\n",  # rows != n: not an LCP header
        b"\x93NUMPY\x01\x00",  # a bare .npy, not an archive
        b"\x89HDF\r\n\x1a\n" + b"\x00" * 64,
        b"PK\x03\x04 truncated zip",
    ],
)
def test_unknown_or_broken_content_names_path(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "p.npz"
    p.write_bytes(content)
    with pytest.raises(InputError) as exc:
        load_lcp(p)
    assert _field(exc) == "path"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    for p in (tmp_path / "nope.npz", tmp_path):
        with pytest.raises(InputError) as exc:
            load_lcp(p)
        assert _field(exc) == "path"


def test_dat_with_numbers_after_q_is_refused(tmp_path) -> None:
    p = tmp_path / "extra.dat"
    p.write_text("2\n0\n2\n2\n2 2\n1 1\n1 1\n-1 -1\n5 6\n")
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert e.value.field == "q"


def test_dat_announcing_an_impossible_size_is_refused_before_allocating(tmp_path) -> None:
    p = tmp_path / "big.dat"
    p.write_text("1000000000000\n0\n1000000000000 1000000000000\n1000000000000 1000000000000\n1 2\n")
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert e.value.field == "M"


# --------------------------------------------------------------------------------------------
# declared sizes against what the file holds and against the size cap, before allocating


def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _npy(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_npz_header_declaring_a_huge_array_is_refused_from_the_header(tmp_path: Path) -> None:
    import time
    import zipfile

    p = tmp_path / "huge.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("M.npy", _npy_header((200000, 200000)) + bytes(1 << 20))
        zf.writestr("q.npy", _npy(np.ones(200000)))
    t0 = time.perf_counter()
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert time.perf_counter() - t0 < 1.0
    assert e.value.field == "M"
    msg = str(e.value)
    assert "200000 x 200000" in msg and "298.0 GiB" in msg and "refused before allocating" in msg


def test_npz_member_whose_zip_directory_lies_is_refused(tmp_path: Path) -> None:
    import struct
    import zipfile

    p = tmp_path / "lie.npz"
    np.savez(p, M=np.eye(2), q=np.ones(2))
    data = bytearray(p.read_bytes())
    cd = data.find(b"PK\x01\x02")  # the first central-directory entry is M.npy
    struct.pack_into("<L", data, cd + 24, 2**30)  # uncompressed size: 1 GiB
    p.write_bytes(bytes(data))
    assert zipfile.ZipFile(p).getinfo("M.npy").file_size == 2**30
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert e.value.field == "M" and "lies about its size" in str(e.value)


def test_npz_shapes_are_checked_against_each_other_before_reading(tmp_path: Path) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, M=np.ones((3, 3, 3)), q=np.ones(3))
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert e.value.field == "M" and "square" in str(e.value)
    np.savez(p, M=np.eye(3), q=np.ones((3, 2)))
    with pytest.raises(InputError) as e:
        load_lcp(p)
    assert e.value.field == "q" and "vector of 3" in str(e.value)


@pytest.mark.parametrize(
    "M",
    [
        np.array([[2, 1], [0, 3]], dtype=np.int16),
        np.array([[2.0, 1.0], [0.0, 3.0]], dtype=">f8"),
        np.asfortranarray(np.array([[2.0, 1.0], [0.0, 3.0]])),
        np.array([[2.0, 1.0], [0.0, 3.0]], dtype=np.float32),
        np.array([[True, False], [False, True]]),
    ],
)
def test_npz_real_dtypes_and_memory_orders_read_as_c_float64(tmp_path: Path, M: np.ndarray) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, M=M, q=np.array([-1, 1], dtype=np.int64))
    M2, q2 = load_lcp(p)
    assert M2.dtype == np.float64 and M2.flags.c_contiguous
    assert np.array_equal(M2, M.astype(np.float64)) and q2.tolist() == [-1.0, 1.0]


def test_compressed_npz_reads_exactly(repo_data: Path, tmp_path: Path) -> None:
    ref = np.load(repo_data / "lcp" / "lcp_mmc.npz", allow_pickle=False)
    p = tmp_path / "z.npz"
    np.savez_compressed(p, M=ref["M"], q=ref["q"])
    M, q = load_lcp(p)
    assert np.array_equal(M, ref["M"]) and np.array_equal(q, ref["q"])


def test_the_size_cap_refuses_an_honest_problem_above_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTACTMP_MAX_BYTES", raising=False)
    p = tmp_path / "p.npz"
    np.savez_compressed(p, M=np.eye(80), q=np.ones(80))  # M: 50 KiB as float64, a small file
    load_lcp(p, max_bytes=2**20)
    with pytest.raises(InputError) as e:
        load_lcp(p, max_bytes=40000)  # the file fits, M does not
    assert e.value.field == "M" and "size cap" in str(e.value)
    np.savez(p, M=np.eye(80), q=np.ones(80))
    with pytest.raises(InputError) as e:
        load_lcp(p, max_bytes=40000)  # the file itself is above the cap
    assert e.value.field == "path" and "before reading" in str(e.value)
    d = tmp_path / "p.dat"
    d.write_text("64\n0\n64\n64\n64 64\n" + "0 " * 64 * 64 + "\n" + "1 " * 64 + "\n")  # 8.5 kB of text
    assert load_lcp(d)[0].shape == (64, 64)
    with pytest.raises(InputError) as e:
        load_lcp(d, max_bytes="20K")  # 32 KiB as float64
    assert e.value.field == "M" and "refused before allocating" in str(e.value)
    monkeypatch.setenv("CONTACTMP_MAX_BYTES", "20K")
    with pytest.raises(InputError) as e:
        load_lcp(d)
    assert e.value.field == "M"


def test_large_dat_is_tokenized_in_chunks_exactly(tmp_path: Path) -> None:
    # ~1.4 MB of text: several tokenizer chunks, tokens cut nowhere
    rng = np.random.default_rng(3)
    n = 250
    M = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-300, 300, (n, n))
    q = rng.standard_normal(n)
    cols = "\n".join(" ".join(repr(float(v)) for v in M[:, j]) for j in range(n))
    p = tmp_path / "big.dat"
    p.write_text(f"{n}\n0\n{n}\n{n}\n{n}\t{n}\n{cols}\n" + "\n".join(map(repr, q.tolist())) + "\ncomment\n")
    assert p.stat().st_size > 4 * (1 << 18)
    M2, q2 = load_lcp(p)
    assert np.array_equal(M2, M) and np.array_equal(q2, q)
