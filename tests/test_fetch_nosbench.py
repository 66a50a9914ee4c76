"""tools/fetch_nosbench.py: the committed manifest, and fetching from a local archive or folder
(a tiny fake NOSBENCH in tmp_path; the network is never used)."""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_tool():
    spec = importlib.util.spec_from_file_location("fetch_nosbench", ROOT / "tools" / "fetch_nosbench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


fn = _load_tool()

#: the fake problems: subset -> {name: content}
FAKE = {
    "nosbench": {"AAA_001.json": b'{"w0": [1.0]}', "BBB_002.json": b'{"w0": [2.0]}'},
    "nosbench-more": {"CCC_003.json": b'{"w0": [3.0]}'},
}
PREFIX = "nosbench-8f44ce4/problems/casadi/"


def _manifest(tmp_path: Path) -> Path:
    m = {"repository": "nosnoc/nosbench", "commit": "8f44ce4", "path": "problems/casadi",
         "subsets": {s: {n: hashlib.sha256(c).hexdigest() for n, c in files.items()} for s, files in FAKE.items()}}
    p = tmp_path / "manifest.json"
    p.write_text(json.dumps(m))
    return p


def _members(extra: dict[str, bytes] | None = None) -> dict[str, bytes]:
    out = {PREFIX + n: c for files in FAKE.values() for n, c in files.items()}
    out[PREFIX + "NOT_IN_MANIFEST.json"] = b"{}"
    out["nosbench-8f44ce4/README.md"] = b"readme"
    out.update(extra or {})
    return out


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _expect_all(dest: Path) -> None:
    for subset, files in FAKE.items():
        assert sorted(p.name for p in (dest / subset).iterdir()) == sorted(files)
        for name, content in files.items():
            assert (dest / subset / name).read_bytes() == content
    assert sorted(p.name for p in dest.iterdir()) == sorted(FAKE)


def test_committed_manifest_lists_the_three_subsets() -> None:
    m = fn.load_manifest()
    assert (m["repository"], m["commit"], m["path"]) == ("nosnoc/nosbench", "8f44ce4", "problems/casadi")
    assert {s: len(f) for s, f in m["subsets"].items()} == {"nosbench": 20, "nosbench-more": 46, "nosbench-wide": 84}
    names = [n for files in m["subsets"].values() for n in files]
    assert len(names) == len(set(names))


def test_from_a_tar_archive_writes_the_verified_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = _tar(tmp_path / "nosbench.tar.gz", _members())
    dest = tmp_path / "dest"
    assert fn.main([str(dest), "--from", str(archive), "--manifest", str(_manifest(tmp_path))]) == 0
    _expect_all(dest)
    assert "CONTACTMP_NOSBENCH=" in capsys.readouterr().out
    # a second run keeps what is there
    report = fn.fetch(dest, archive, manifest=fn.load_manifest(_manifest(tmp_path)))
    assert report["written"] == [] and len(report["kept"]) == 3


def test_from_a_folder_and_from_a_zip(tmp_path: Path) -> None:
    src = tmp_path / "checkout"
    for name, data in _members().items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    manifest = str(_manifest(tmp_path))
    assert fn.main([str(tmp_path / "a"), "--from", str(src), "--manifest", manifest]) == 0
    _expect_all(tmp_path / "a")
    zpath = tmp_path / "nosbench.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for name, data in _members().items():
            zf.writestr(name, data)
    assert fn.main([str(tmp_path / "b"), "--from", str(zpath), "--manifest", manifest]) == 0
    _expect_all(tmp_path / "b")


def test_subsets_option(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "nosbench.tar.gz", _members())
    dest = tmp_path / "dest"
    assert fn.main([str(dest), "--from", str(archive), "--subsets", "nosbench-more",
                    "--manifest", str(_manifest(tmp_path))]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["nosbench-more"]
    assert fn.main([str(dest), "--from", str(archive), "--subsets", "nosbench-huge",
                    "--manifest", str(_manifest(tmp_path))]) == 2


def test_a_changed_or_missing_file_is_named_and_not_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members = _members()
    members[PREFIX + "AAA_001.json"] = b'{"w0": [1.5]}'  # changed upstream
    del members[PREFIX + "CCC_003.json"]
    archive = _tar(tmp_path / "nosbench.tar.gz", members)
    dest = tmp_path / "dest"
    assert fn.main([str(dest), "--from", str(archive), "--manifest", str(_manifest(tmp_path))]) == 1
    err = capsys.readouterr().err
    assert "nosbench/AAA_001.json: SHA-256 does not match" in err
    assert "nosbench-more/CCC_003.json: not found" in err
    assert not (dest / "nosbench" / "AAA_001.json").exists()
    assert (dest / "nosbench" / "BBB_002.json").read_bytes() == FAKE["nosbench"]["BBB_002.json"]


def test_unreadable_sources_and_manifests_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = str(_manifest(tmp_path))
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    assert fn.main([str(tmp_path / "d"), "--from", str(tmp_path / "junk.tar.gz"), "--manifest", manifest]) == 2
    assert fn.main([str(tmp_path / "d"), "--from", str(tmp_path / "nothing"), "--manifest", manifest]) == 2
    bad = json.loads(Path(manifest).read_text())
    bad["subsets"]["nosbench"]["../escape.json"] = "0" * 64
    Path(manifest).write_text(json.dumps(bad))
    assert fn.main([str(tmp_path / "d"), "--from", str(tmp_path), "--manifest", manifest]) == 2
    assert "'subsets.nosbench'" in capsys.readouterr().err


def test_without_from_the_archive_is_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _tar(tmp_path / "nosbench.tar.gz", _members())
    calls = []

    def fake_download(commit: str, into: Path, timeout: float = 120.0) -> Path:
        calls.append(commit)
        return archive

    monkeypatch.setattr(fn, "download", fake_download)
    assert fn.main([str(tmp_path / "dest"), "--manifest", str(_manifest(tmp_path))]) == 0
    assert calls == ["8f44ce4"]
    _expect_all(tmp_path / "dest")
