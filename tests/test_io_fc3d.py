"""fc3d readers: .npz, Siconos .dat (dense and sparse-block) and FCLIB HDF5 give the .npz arrays;
malformed files raise InputError naming the field; load_problem tells LCPs from fc3d by content."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import FC3D_FORMATS, load_fc3d, load_lcp, load_problem, sniff_format
from contactmp.solvers.fc3d.problem import fc3d_residual

RAW_FC3D = [
    ("FC3D_Example1.dat", "FC3D_Example1"),
    ("Rover1039.dat", "Rover1039"),
    ("Capsules-i125-1213.hdf5", "Capsules-i125-1213"),
]


def _ref(repo_data: Path, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.load(repo_data / "fc3d" / f"{name}.npz", allow_pickle=False)
    return d["W"], d["q"], d["mu"]


def _assert_same(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...]) -> None:
    for a, b in zip(got, ref):
        assert a.dtype == np.float64
        assert np.array_equal(a, b)


def _field(exc: pytest.ExceptionInfo[InputError]) -> str:
    return exc.value.field


# --------------------------------------------------------------------------------------------
# writers used to build test files (Siconos' and FCLIB's layouts)


def _fmt(values: Any) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _dense_dat(W: np.ndarray, q: np.ndarray, mu: np.ndarray, tail: str = "") -> str:
    m = W.shape[0]
    cols = "\n".join(_fmt(W[:, j]) for j in range(m))  # column-major, one column per line
    return f"3\n{m // 3}\n0\n{m}\n{m}\n{m}\t{m}\n{cols}\n{_fmt(q)}\n{_fmt(mu)}\n{tail}"


def _sbm_dat(W: np.ndarray, q: np.ndarray, mu: np.ndarray, sizes: list[int]) -> str:
    """W as Siconos' sparse-block text with square blocks of ``sizes``; all-zero blocks left out."""
    off = np.cumsum([0] + sizes)
    nb = len(sizes)
    index1, index2, blocks = [0], [], []
    for bi in range(nb):
        for bj in range(nb):
            block = W[off[bi]:off[bi + 1], off[bj]:off[bj + 1]]
            if np.any(block):
                index2.append(bj)
                blocks.append(block)
        index1.append(len(index2))
    m = W.shape[0]
    lines = [str(3), str(m // 3), "1", str(m), str(m), str(len(blocks)), str(nb), str(nb),
             "\t".join(str(v) for v in off[1:]), "\t".join(str(v) for v in off[1:]),
             str(len(index1)), str(len(index2)),
             "\t".join(map(str, index1)), "\t".join(map(str, index2))]
    for k, block in enumerate(blocks):
        lines.append(str(k))
        lines += [repr(float(v)) for v in block.ravel(order="F")]
    lines += [_fmt(q), _fmt(mu)]
    return "\n".join(lines) + "\n"


def _write_fclib(path: Path, W: np.ndarray, q: np.ndarray, mu: np.ndarray, layout: str = "csr",
                 *, spacedim: int = 3, edit: Any = None) -> Path:
    """An FCLIB local problem with W stored as csr (nz = -2), csc (nz = -1) or triplets (nz >= 0)."""
    m, n = W.shape
    if layout == "csr":
        r, c = np.nonzero(W)
        p = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=m))])
        i, x, nz = c, W[r, c], -2
    elif layout == "csc":
        c, r = np.nonzero(W.T)
        p = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=n))])
        i, x, nz = r, W[r, c], -1
    else:  # triplets, shuffled, with every entry split into two halves (duplicates are summed)
        r, c = np.nonzero(W)
        order = np.random.default_rng(0).permutation(2 * r.size)
        rows, cols = np.concatenate([r, r])[order], np.concatenate([c, c])[order]
        halves = np.concatenate([W[r, c] / 2, W[r, c] - W[r, c] / 2])[order]
        p, i, x, nz = rows, cols, halves, rows.size
    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_local")
        g["spacedim"] = np.array([spacedim], dtype=np.int32)
        w = g.create_group("W")
        for key, val in (("m", m), ("n", n), ("nz", nz), ("nzmax", len(x))):
            w[key] = np.array([val], dtype=np.int32)
        w["p"] = np.asarray(p, dtype=np.int32)
        w["i"] = np.asarray(i, dtype=np.int32)
        w["x"] = np.asarray(x, dtype=np.float64)
        v = g.create_group("vectors")
        v["q"] = q
        v["mu"] = mu
        # a stored solution that is wrong on purpose: the reader must never look at it
        s = f.create_group("solution")
        s["r"] = np.full(3, np.nan)
        if edit is not None:
            edit(f)
    return path


# --------------------------------------------------------------------------------------------
# the shared files


@pytest.mark.parametrize(("raw", "name"), RAW_FC3D)
def test_raw_files_equal_their_npz(repo_data: Path, raw: str, name: str) -> None:
    _assert_same(load_fc3d(repo_data / "raw" / raw), _ref(repo_data, name))
    kind, arrays = load_problem(repo_data / "raw" / raw)
    assert kind == "fc3d"
    _assert_same(arrays, _ref(repo_data, name))


def test_every_shared_fc3d_npz_loads_exactly(repo_data: Path) -> None:
    files = sorted((repo_data / "fc3d").glob("*.npz"))
    assert len(files) >= 19
    for f in files:
        W, q, mu = load_fc3d(f)
        d = np.load(f, allow_pickle=False)
        assert np.array_equal(W, d["W"]) and np.array_equal(q, d["q"]) and np.array_equal(mu, d["mu"])
        assert W.shape == (3 * int(d["nc"]),) * 2 and mu.shape == (int(d["nc"]),)
        assert load_problem(f)[0] == "fc3d"


def test_load_problem_tells_lcps_from_fc3d(repo_data: Path) -> None:
    for f in [*(repo_data / "lcp").glob("*.npz"), *(repo_data / "raw").glob("lcp_*.dat")]:
        kind, (M, q) = load_problem(f)
        assert kind == "lcp"
        M2, q2 = load_lcp(f)
        assert np.array_equal(M, M2) and np.array_equal(q, q2)


def test_closed_form_solution_of_fc3d_example1(repo_data: Path) -> None:
    # W = I, q = (-1, 1, 3) per contact, mu = 0.1: u = r + q. Sticking (u = 0) would need
    # r = (1, -1, -3), outside the cone; sliding with r_T = -mu r_n u_T/||u_T||, u_n = 0 gives
    # r_n = 1, r_T = 0.1 (-1, -3)/sqrt(10) and u_T = r_T + (1, 3).
    W, q, mu = load_fc3d(repo_data / "raw" / "FC3D_Example1.dat")
    rt = -0.1 * np.array([1.0, 3.0]) / np.sqrt(10.0)
    r = np.tile(np.concatenate([[1.0], rt]), 3)
    assert fc3d_residual(W, q, mu, r) < 1e-15


def test_content_not_extension_decides(repo_data: Path, tmp_path: Path) -> None:
    pairs = [("raw/Rover1039.dat", "a.npz"), ("raw/Capsules-i125-1213.hdf5", "b.dat"),
             ("fc3d/Rover1039.npz", "c.hdf5")]
    for src, dst in pairs:
        shutil.copy(repo_data / src, tmp_path / dst)
        assert load_problem(tmp_path / dst)[0] == "fc3d"
    assert sniff_format(tmp_path / "a.npz", FC3D_FORMATS).name == "siconos-fc3d-dat"
    assert sniff_format(tmp_path / "b.dat", FC3D_FORMATS).name == "fclib-hdf5"
    _assert_same(load_fc3d(tmp_path / "c.hdf5"), _ref(repo_data, "Rover1039"))


# --------------------------------------------------------------------------------------------
# Siconos .dat: dense and sparse-block


def test_dense_dat_round_trip_with_isComplete_and_comment(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")
    p = tmp_path / "r.dat"
    p.write_text(_dense_dat(W, q, mu, tail="1\nwritten by a test\n"))
    _assert_same(load_fc3d(p), (W, q, mu))


@pytest.mark.parametrize("sizes", [[3, 3, 3, 3], [3, 9], [6, 3, 3]])
def test_sparse_block_dat_equals_npz(repo_data: Path, tmp_path: Path, sizes: list[int]) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")
    W = W.copy()
    W[0:3, 9:12] = 0.0  # an empty block, left out of the file
    p = tmp_path / "sbm.dat"
    p.write_text(_sbm_dat(W, q, mu, sizes))
    _assert_same(load_fc3d(p), (W, q, mu))
    assert load_problem(p)[0] == "fc3d"


def test_sparse_block_dat_of_a_shared_problem_with_many_contacts(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "NESpheres_30_1")
    p = tmp_path / "sbm.dat"
    p.write_text(_sbm_dat(W, q, mu, [3] * (W.shape[0] // 3)))
    _assert_same(load_fc3d(p), (W, q, mu))


_OK_DENSE = "3\n1\n0\n3\n3\n3\t3\n1 0 0\n0 1 0\n0 0 1\n-1 0 0\n0.5\n"
_SBM_HEAD = "3\n2\n1\n6\n6\n"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (_OK_DENSE.replace("-1 0 0\n0.5\n", "-1 0 0\n"), "mu"),  # mu missing
        (_OK_DENSE.replace("-1 0 0\n0.5\n", "-1 0\n"), "q"),  # q truncated
        (_OK_DENSE.replace("0.5\n", "-0.5\n"), "mu"),  # negative friction
        (_OK_DENSE.replace("0 1 0\n", "0 nan 0\n"), "W"),  # NaN
        (_OK_DENSE.replace("0 1 0\n", "0 1 x\n"), "W"),  # not a number
        (_OK_DENSE.replace("3\t3\n", "3\t4\n"), "W"),  # dense block disagrees with the header
        (_OK_DENSE + "7 8\n", "mu"),  # numbers after mu
        (_OK_DENSE.replace("\n0\n3\n3\n", "\n2\n3\n3\n"), "storage"),  # Siconos' csparse storage
        # sparse-block: cumulative sizes not increasing, block column out of range, wrong block number
        (_SBM_HEAD + "1\n2\n2\n3 3\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 9 + "\n", "blocksize0"),
        (_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n1\n0 1 1\n5\n0\n" + "1 " * 9 + "\n", "index2_data"),
        (_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n1\n0 1 1\n0\n4\n" + "1 " * 9 + "\n", "block"),
        (_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n2\n0 1 1\n0 1\n0\n" + "1 " * 9 + "\n", "filled2"),
        (_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 8 + "\n", "block"),  # truncated
        (_SBM_HEAD + "1\n2\n2\n3 5\n3 6\n3\n1\n0 1 1\n0\n0\n" + "1 " * 9 + "\n", "blocksize0"),  # ends at 5
        (_SBM_HEAD + "-1\n", "nbblocks"),
    ],
)
def test_malformed_dat_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    p = tmp_path / "p.dat"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == field, str(exc.value)


def test_well_formed_small_dat_files_read(tmp_path: Path) -> None:
    p = tmp_path / "p.dat"
    p.write_text(_OK_DENSE)
    W, q, mu = load_fc3d(p)
    assert np.array_equal(W, np.eye(3)) and q.tolist() == [-1, 0, 0] and mu.tolist() == [0.5]
    # r = (1, 0, 0): u = 0, in the cone and complementary
    assert fc3d_residual(W, q, mu, np.array([1.0, 0.0, 0.0])) == 0.0
    # the same matrix in sparse-block storage with one empty block row (filled1 < blocknumber0 + 1)
    p.write_text(_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n2\n1\n0 1\n1\n0\n" + "2 " * 9 + "\n" + "0 " * 6 + "\n1 1\n")
    W, q, mu = load_fc3d(p)
    assert np.array_equal(W[:3, 3:], np.full((3, 3), 2.0)) and not W[:, :3].any() and not W[3:].any()


def test_dat_announcing_impossible_sizes_is_refused_before_allocating(tmp_path: Path) -> None:
    p = tmp_path / "big.dat"
    big = 3 * 10**11
    p.write_text(f"3\n{10**11}\n0\n{big}\n{big}\n{big} {big}\n1 2 3\n")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "W"
    # sparse-block: the dense matrix would not fit in memory, refused before reading blocks
    p.write_text(f"3\n{10**6}\n1\n{3 * 10**6}\n{3 * 10**6}\n1\n1\n1\n")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "W" and "GiB" in str(exc.value)
    # block counts larger than the file
    p.write_text(_SBM_HEAD + "1\n2\n2\n3 6\n3 6\n999999\n1\n")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) in ("filled1", "index1_data")


def test_two_dimensional_and_lcp_text_are_not_fc3d(repo_data: Path, tmp_path: Path) -> None:
    p = tmp_path / "fc2d.dat"
    p.write_text("2\n1\n0\n2\n2\n2\t2\n1 0\n0 1\n-1 0\n0.5\n")
    for f in (p, repo_data / "raw" / "lcp_mmc.dat"):
        with pytest.raises(InputError) as exc:
            load_fc3d(f)
        assert _field(exc) == "path" and "expected" in str(exc.value)
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert _field(exc) == "path"


# --------------------------------------------------------------------------------------------
# FCLIB HDF5


@pytest.mark.parametrize("layout", ["csr", "csc", "triplet"])
def test_fclib_layouts_equal_npz(repo_data: Path, tmp_path: Path, layout: str) -> None:
    # Rover1039's W is not symmetric, so a transposed reading would be caught.
    W, q, mu = _ref(repo_data, "Rover1039")
    assert not np.array_equal(W, W.T)
    f = _write_fclib(tmp_path / f"{layout}.hdf5", W, q, mu, layout)
    got = load_fc3d(f)
    if layout == "triplet":  # halves summed: equal up to one rounding
        np.testing.assert_allclose(got[0], W, rtol=1e-15, atol=0)
        _assert_same(got[1:], (q, mu))
    else:
        _assert_same(got, (W, q, mu))


def test_fclib_csc_of_capsules_equals_npz(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Capsules-i125-1213")
    _assert_same(load_fc3d(_write_fclib(tmp_path / "c.hdf5", W, q, mu, "csc")), (W, q, mu))


def _set(path: str, value: Any):
    def edit(f: h5py.File) -> None:
        del f[path]
        f[path] = value
    return edit


def _delete(path: str):
    def edit(f: h5py.File) -> None:
        del f[path]
    return edit


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_set("fclib_local/spacedim", np.array([2], np.int32)), "spacedim"),
        (_set("fclib_local/W/nz", np.array([-3], np.int32)), "W/nz"),
        (_set("fclib_local/W/p", np.array([0, 5, 3] + [9] * 10, np.int32)), "W/p"),
        (_set("fclib_local/W/m", np.array([11], np.int32)), "W"),
        (_set("fclib_local/W/m", np.array([1.5])), "W/m"),
        (_set("fclib_local/vectors/q", np.ones(5)), "q"),
        (_set("fclib_local/vectors/mu", -np.ones(4)), "mu"),
        (_set("fclib_local/vectors/mu", np.array([b"a", b"b", b"c", b"d"])), "mu"),
        (_delete("fclib_local/W/x"), "W/x"),
        (_delete("fclib_local/vectors/q"), "q"),
        (_delete("fclib_local/spacedim"), "spacedim"),
    ],
)
def test_fclib_malformed_names_the_field(repo_data: Path, tmp_path: Path, edit: Any, field: str) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")
    f = _write_fclib(tmp_path / "bad.hdf5", W, q, mu, "csr", edit=edit)
    with pytest.raises(InputError) as exc:
        load_fc3d(f)
    assert _field(exc) == field, str(exc.value)


def test_fclib_indices_out_of_range(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")
    for layout, key, field in (("csr", "i", "W/i"), ("csc", "i", "W/i"), ("triplet", "p", "W/p"),
                               ("triplet", "i", "W/i")):
        def edit(f: h5py.File, key: str = key) -> None:
            arr = f["fclib_local/W"][key][()]
            arr[3] = 12
            f["fclib_local/W"][key][...] = arr
        path = _write_fclib(tmp_path / f"{layout}{key}.hdf5", W, q, mu, layout, edit=edit)
        with pytest.raises(InputError) as exc:
            load_fc3d(path)
        assert _field(exc) == field, (layout, key, str(exc.value))
    # triplets announced beyond what is stored
    path = _write_fclib(tmp_path / "nz.hdf5", W, q, mu, "triplet",
                        edit=_set("fclib_local/W/nz", np.array([10**6], np.int32)))
    with pytest.raises(InputError) as exc:
        load_fc3d(path)
    assert _field(exc) == "W/p"


def test_fclib_global_problem_and_other_hdf5_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "g.hdf5"
    with h5py.File(p, "w") as f:
        f.create_group("fclib_global")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "fclib_local" and "global" in str(exc.value)
    with h5py.File(p, "w") as f:
        f["data"] = np.ones(3)
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert _field(exc) == "fclib_local"


def test_fclib_links_and_external_data_are_refused(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(12, dtype=np.float64).tobytes())
    other = _write_fclib(tmp_path / "other.hdf5", W, q, mu)

    def external_raw(f: h5py.File) -> None:
        del f["fclib_local/vectors/q"]
        f["fclib_local/vectors"].create_dataset("q", shape=(12,), dtype="f8", external=[(str(secret), 0, 96)])

    def external_link(f: h5py.File) -> None:
        del f["fclib_local/vectors/q"]
        f["fclib_local/vectors/q"] = h5py.ExternalLink(str(other), "/fclib_local/vectors/q")

    def soft_link(f: h5py.File) -> None:
        del f["fclib_local/vectors/mu"]
        f["fclib_local/vectors/mu"] = h5py.SoftLink("/fclib_local/vectors/q")

    for edit, field in ((external_raw, "q"), (external_link, "q"), (soft_link, "mu")):
        path = _write_fclib(tmp_path / f"{edit.__name__}.hdf5", W, q, mu, edit=edit)
        with pytest.raises(InputError) as exc:
            load_fc3d(path)
        assert _field(exc) == field, (edit.__name__, str(exc.value))


def test_fclib_declared_sizes_beyond_the_stored_bytes_are_refused(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")

    def huge_unwritten_x(f: h5py.File) -> None:
        del f["fclib_local/W/x"]
        f["fclib_local/W"].create_dataset("x", shape=(10**10,), dtype="f8", chunks=(10**6,))

    def huge_compressed_x(f: h5py.File) -> None:
        del f["fclib_local/W/x"]
        ds = f["fclib_local/W"].create_dataset("x", shape=(10**8,), dtype="f8", chunks=(10**6,),
                                               compression="gzip")
        ds[: 10**6] = 0.0  # one chunk of zeros: a few kB stored for 800 MB declared

    for edit in (huge_unwritten_x, huge_compressed_x):
        path = _write_fclib(tmp_path / f"{edit.__name__}.hdf5", W, q, mu, edit=edit)
        with pytest.raises(InputError) as exc:
            load_fc3d(path)
        assert _field(exc) == "W/x" and "refused before allocating" in str(exc.value)
    # a dimension whose dense W would not fit in memory
    path = _write_fclib(tmp_path / "m.hdf5", W, q, mu, edit=lambda f: [
        _set("fclib_local/W/m", np.array([3 * 10**6], np.int32))(f),
        _set("fclib_local/W/n", np.array([3 * 10**6], np.int32))(f)])
    with pytest.raises(InputError) as exc:
        load_fc3d(path)
    assert _field(exc) == "W" and "GiB" in str(exc.value)


def test_gzip_compressed_fclib_reads(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Capsules-i125-1213")

    def compress(f: h5py.File) -> None:
        for key in ("p", "i", "x"):
            data = f["fclib_local/W"][key][()]
            del f["fclib_local/W"][key]
            f["fclib_local/W"].create_dataset(key, data=data, compression="gzip", shuffle=True)

    _assert_same(load_fc3d(_write_fclib(tmp_path / "z.hdf5", W, q, mu, edit=compress)), (W, q, mu))


# --------------------------------------------------------------------------------------------
# .npz


@pytest.mark.parametrize(
    ("arrays", "field"),
    [
        ({"W": np.eye(3), "q": np.ones(3)}, "mu"),
        ({"W": np.eye(4), "q": np.ones(4), "mu": np.ones(1)}, "W"),
        ({"W": np.eye(3), "q": np.ones(3), "mu": np.ones(2)}, "mu"),
        ({"W": np.eye(3), "q": np.ones(3), "mu": np.ones(1), "nc": np.array(2)}, "nc"),
        ({"W": np.eye(3), "q": np.array([1.0, np.inf, 0.0]), "mu": np.ones(1)}, "q"),
        ({"W": np.eye(3), "q": np.ones(3), "mu": np.array(["x"])}, "mu"),
    ],
)
def test_malformed_npz_names_the_field(tmp_path: Path, arrays: dict[str, np.ndarray], field: str) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, **arrays)
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == field, str(exc.value)


def test_npz_pickle_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, W=np.array([object()] * 9, dtype=object).reshape(3, 3), q=np.ones(3), mu=np.ones(1))
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "W" and "pickle" in str(exc.value)
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert _field(exc) == "W"


def test_load_problem_npz_with_neither_matrix(tmp_path: Path) -> None:
    p = tmp_path / "p.npz"
    np.savez(p, A=np.eye(3), b=np.ones(3))
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert _field(exc) == "path" and "M" in str(exc.value) and "W" in str(exc.value)
    p.write_bytes(b"nothing we know\n")
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert _field(exc) == "path" and "fc3d" in str(exc.value) and "lcp" in str(exc.value)


# --------------------------------------------------------------------------------------------
# declared sizes checked before allocating, the size cap, links checked before they are followed


def test_sparse_block_dat_is_capped_before_its_matrix_is_allocated(tmp_path: Path) -> None:
    # 10 contacts, one nonzero block: a few hundred bytes of text for a 7200-byte dense W
    W = np.zeros((30, 30))
    W[:3, :3] = np.eye(3)
    q, mu = -np.ones(30), np.full(10, 0.5)
    p = tmp_path / "sbm.dat"
    p.write_text(_sbm_dat(W, q, mu, [3] * 10))
    assert p.stat().st_size < 4000
    _assert_same(load_fc3d(p, max_bytes=20000), (W, q, mu))
    with pytest.raises(InputError) as exc:
        load_fc3d(p, max_bytes=4000)  # the file fits, its dense W does not
    assert _field(exc) == "W" and "size cap" in str(exc.value) and "refused before allocating" in str(exc.value)
    with pytest.raises(InputError) as exc:
        load_fc3d(p, max_bytes=100)  # the file itself does not
    assert _field(exc) == "path"


def test_sparse_block_more_blocks_than_the_grid_holds(tmp_path: Path) -> None:
    p = tmp_path / "p.dat"
    p.write_text(_SBM_HEAD + "5\n2\n2\n3 6\n3 6\n3\n5\n0 1 1\n0\n0\n" + "1 " * 60 + "\n")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "nbblocks"


def test_fc3d_npz_headers_are_checked_before_reading(tmp_path: Path) -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (300000, 300000)})
    p = tmp_path / "huge.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("W.npy", buf.getvalue() + bytes(4096))
        zf.writestr("q.npy", b"")
        zf.writestr("mu.npy", b"")
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "W" and "refused before allocating" in str(exc.value)
    np.savez(p, W=np.eye(3), q=np.ones(3), mu=np.array(0.3))  # a scalar mu is broadcast
    assert load_fc3d(p)[2].tolist() == [0.3]
    np.savez(p, W=np.eye(6), q=np.ones(6), mu=np.ones(2), nc=np.array([2, 2]))
    with pytest.raises(InputError) as exc:
        load_fc3d(p)
    assert _field(exc) == "nc"


def test_fclib_reads_only_the_entries_the_pointers_announce(repo_data: Path, tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")

    def padded(f: h5py.File) -> None:  # nzmax > nnz: trailing storage FCLIB allows, never read
        for key, dtype in (("i", np.int32), ("x", np.float64)):
            data = f["fclib_local/W"][key][()]
            del f["fclib_local/W"][key]
            f["fclib_local/W"][key] = np.concatenate([data, np.full(5, 99, dtype)])

    _assert_same(load_fc3d(_write_fclib(tmp_path / "pad.hdf5", W, q, mu, edit=padded)), (W, q, mu))


def test_fclib_groups_links_and_dataspaces_are_checked_before_they_are_followed(repo_data: Path,
                                                                                tmp_path: Path) -> None:
    W, q, mu = _ref(repo_data, "Rover1039")

    def external_group(f: h5py.File) -> None:
        del f["fclib_local/vectors"]
        f["fclib_local/vectors"] = h5py.ExternalLink(str(tmp_path / "missing.hdf5"), "/vectors")

    def null_q(f: h5py.File) -> None:
        del f["fclib_local/vectors/q"]
        f["fclib_local/vectors"].create_dataset("q", data=h5py.Empty("f8"))

    def huge_q(f: h5py.File) -> None:
        del f["fclib_local/vectors/q"]
        f["fclib_local/vectors"].create_dataset("q", shape=(10**9,), dtype="f8", chunks=(10**6,))

    def w_dataset(f: h5py.File) -> None:
        del f["fclib_local/W"]
        f["fclib_local/W"] = np.eye(12)

    for edit, field, words in ((external_group, "vectors", "ExternalLink"), (null_q, "q", "null dataspace"),
                               (huge_q, "q", "size cap"), (w_dataset, "W", "must be a group")):
        path = _write_fclib(tmp_path / f"{edit.__name__}.hdf5", W, q, mu, edit=edit)
        with pytest.raises(InputError) as exc:
            load_fc3d(path)
        assert _field(exc) == field and words in str(exc.value), (edit.__name__, str(exc.value))
    path = _write_fclib(tmp_path / "ok.hdf5", W, q, mu)
    with pytest.raises(InputError) as exc:
        load_fc3d(path, max_bytes=1000)  # a 12 x 12 dense W is 1152 bytes
    assert _field(exc) in ("path", "W")


def test_legal_but_extreme_values_load(tmp_path: Path) -> None:
    # not input errors: the solve's status says what happens with them
    W = -np.eye(3) * 1e300
    p = tmp_path / "p.npz"
    np.savez(p, W=W, q=np.array([1e300, -1e300, 5e-324]), mu=np.array([1e300]))
    W2, q2, mu2 = load_fc3d(p)
    assert np.array_equal(W2, W) and mu2.tolist() == [1e300]
    p = tmp_path / "p.dat"
    p.write_text(_OK_DENSE.replace("1 0 0\n", "-1e308 0 0\n", 1))
    assert load_fc3d(p)[0][0, 0] == -1e308
