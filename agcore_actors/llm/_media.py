"""Media in content parts: images, audio and files built from bytes, checked against
limits, shown as placeholders, and stored by reference.

The content model is the chat types' own parts (:class:`TextPart`, :class:`ImagePart`
by URL or ``data:`` URL, :class:`AudioPart`, :class:`FilePart`); this module adds:

- builders from bytes (:func:`image_part_of`, :func:`file_part_of`, :func:`audio_part_of`)
  and the reverse (:func:`media_of`: the media type and base64 text of a part's inline
  data, None for a URL or a text part);
- :func:`check_parts`: each inline part under :attr:`MediaLimits.max_part_bytes`, all of a
  message under :attr:`MediaLimits.max_message_bytes`, images of an accepted type, else
  :class:`ContentTooLarge` or :class:`InvalidContent` (both ``ValueError``), before
  anything is stored or sent;
- :func:`placeholder` and :func:`redacted_content`: what logs, traces and the observer
  show instead of the data (``[image image/png 10.0 MiB sha256:1a2b3c4d5e6f]``): no
  base64 of a part ever reaches them;
- blob references: :func:`split_blobs` takes the inline data of image and file parts of
  at least ``threshold`` bytes out of a message (each becomes ``blob:sha256:<hex>;<media
  type>`` and a :class:`Blob`), :func:`join_blobs` puts it back from a lookup. A store
  keeps each blob once by its content hash; the message body keeps only the reference.

Pure functions on frozen data: no I/O, no event loop.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Literal

import attrs
import msgspec

from .._errors import AgcoreError
from ._types import (
    AudioPart,
    Content,
    ContentPart,
    FileData,
    FilePart,
    ImagePart,
    ImageUrl,
    InputAudio,
    Message,
    TextPart,
)

__all__ = [
    "BLOB_PREFIX",
    "Blob",
    "ContentTooLarge",
    "InvalidContent",
    "MediaKind",
    "MediaLimits",
    "audio_part_of",
    "blob_data_url",
    "blob_refs",
    "check_parts",
    "file_part_of",
    "image_part_of",
    "join_blobs",
    "media_kind",
    "media_of",
    "parse_ref",
    "placeholder",
    "redacted_content",
    "split_blobs",
]

MediaKind = Literal["text", "image", "audio", "file"]
#: A part's inline data replaced by its blob's content hash.
BLOB_PREFIX = "blob:sha256:"
#: Image types every provider here takes.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
AudioFormat = Literal["wav", "mp3", "aac", "flac", "opus", "pcm16"]
_AUDIO_TYPES: dict[str, AudioFormat] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/aac": "aac",
    "audio/flac": "flac",
    "audio/opus": "opus",
    "audio/ogg": "opus",
}


class InvalidContent(AgcoreError, ValueError):
    """A content part that cannot be used: bad base64, a media type not accepted."""

    kind = "invalid_content"


class ContentTooLarge(AgcoreError, ValueError):
    """A part (or a message's parts together) over its limit; ``size`` and ``limit``
    in bytes of decoded data."""

    kind = "content_too_large"

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size} bytes, over the limit of {limit}")
        self.size = size
        self.limit = limit


@attrs.frozen
class MediaLimits:
    """Limits on the media of one message (a user turn or a tool result)."""

    #: Decoded bytes of one inline part (OpenAI takes 20 MB per image).
    max_part_bytes: int = 20 * 1024 * 1024
    #: Decoded bytes of all inline parts of one message together.
    max_message_bytes: int = 50 * 1024 * 1024
    #: Media types an image part may have.
    image_types: tuple[str, ...] = IMAGE_TYPES


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def image_part_of(
    data: bytes, media_type: str, *, detail: Literal["auto", "low", "high"] | None = None
) -> ImagePart:
    """An image part of ``data`` (``image/png``, ``image/jpeg``, ...) as a ``data:`` URL."""
    return ImagePart(ImageUrl(_data_url(media_type, data), detail))


def file_part_of(data: bytes, media_type: str, filename: str | None = None) -> FilePart:
    """A file part (a PDF, a text file) of ``data`` inline as a ``data:`` URL."""
    return FilePart(FileData(file_data=_data_url(media_type, data), filename=filename))


def audio_part_of(data: bytes, media_type: str) -> AudioPart:
    """An audio part of ``data``; raises :class:`InvalidContent` for a type the chat
    API has no format for (it takes wav, mp3, aac, flac, opus)."""
    fmt = _AUDIO_TYPES.get(media_type.lower())
    if fmt is None:
        raise InvalidContent(f"audio of type {media_type!r} has no chat API format")
    return AudioPart(InputAudio(base64.b64encode(data).decode("ascii"), fmt))


def _split_data_url(url: str) -> tuple[str, str] | None:
    if not url.startswith("data:") or ";base64," not in url[:200]:
        return None
    media, data = url[5:].split(";base64,", 1)
    return media, data


def media_kind(part: ContentPart) -> MediaKind:
    """What ``part`` carries (a refusal is text)."""
    if isinstance(part, ImagePart):
        return "image"
    if isinstance(part, AudioPart):
        return "audio"
    if isinstance(part, FilePart):
        return "file"
    return "text"


def media_of(part: ContentPart) -> tuple[str, str] | None:
    """The media type and base64 text of ``part``'s inline data (None: a URL, a blob
    reference, a file by id, or text)."""
    if isinstance(part, ImagePart):
        return _split_data_url(part.image_url.url)
    if isinstance(part, AudioPart):
        return f"audio/{part.input_audio.format}", part.input_audio.data
    if isinstance(part, FilePart) and part.file.file_data is not None:
        return _split_data_url(part.file.file_data)
    return None


def _decoded_size(b64: str) -> int:
    return len(b64) * 3 // 4 - b64[-2:].count("=")


def check_parts(parts: Sequence[ContentPart], limits: MediaLimits = MediaLimits()) -> None:
    """Raise :class:`ContentTooLarge` or :class:`InvalidContent` unless ``parts`` keep
    ``limits`` (sizes of decoded data; images of an accepted type)."""
    total = 0
    for part in parts:
        if isinstance(part, ImagePart):
            url = part.image_url.url
            inline = _split_data_url(url)
            if inline is None and not url.startswith(("http://", "https://")):
                raise InvalidContent("an image is a data: URL of base64 data or an http(s) URL")
            if inline is not None and inline[0].lower() not in limits.image_types:
                raise InvalidContent(f"images of type {inline[0]!r} are not accepted")
        found = media_of(part)
        if found is None:
            continue
        if not _B64.fullmatch(found[1]):
            raise InvalidContent(f"the data of a {media_kind(part)} part is not base64")
        size = _decoded_size(found[1])
        if size > limits.max_part_bytes:
            raise ContentTooLarge(f"a {media_kind(part)} part", size, limits.max_part_bytes)
        total += size
    if total > limits.max_message_bytes:
        raise ContentTooLarge("the parts of one message", total, limits.max_message_bytes)


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB" if size >= 102_400 else f"{size} bytes"


def placeholder(part: ContentPart) -> str:
    """What a log shows for ``part``: its kind, media type, size and a short hash."""
    if isinstance(part, TextPart):
        return part.text
    kind = media_kind(part)
    url = _url_of(part)
    if url is not None and url.startswith(BLOB_PREFIX):
        digest, media = parse_ref(url)
        return f"[{kind} {media} sha256:{digest[:12]}]"
    found = media_of(part)
    if found is None:
        where = part.image_url.url if isinstance(part, ImagePart) else ""
        return f"[{kind} {where}]".replace(" ]", "]")
    media, b64 = found
    digest = hashlib.sha256(b64.encode("ascii", "replace")).hexdigest()[:12]
    return f"[{kind} {media} {_mib(_decoded_size(b64))} sha256:{digest}]"


def redacted_content(content: Content | None) -> str:
    """``content`` as text for a log, each media part as its :func:`placeholder`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(placeholder(p) for p in content)


# -- blobs --------------------------------------------------------------------------------


class Blob(msgspec.Struct, frozen=True):
    """The decoded data of a part, keyed by the SHA-256 of ``data``."""

    sha256: str
    data: bytes


def _blob(b64: str, media: str) -> Blob:
    try:
        data = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidContent(f"the {media} data is not valid base64") from None
    return Blob(hashlib.sha256(data).hexdigest(), data)


def _parts(content: Content | None) -> list[ContentPart] | None:
    return content if isinstance(content, list) else None


def _url_of(part: ContentPart) -> str | None:
    if isinstance(part, ImagePart):
        return part.image_url.url
    if isinstance(part, FilePart):
        return part.file.file_data
    return None


def _with_url(part: ContentPart, url: str) -> ContentPart:
    if isinstance(part, ImagePart):
        return ImagePart(msgspec.structs.replace(part.image_url, url=url))
    assert isinstance(part, FilePart)
    return FilePart(msgspec.structs.replace(part.file, file_data=url))


def split_blobs(message: Message, threshold: int) -> tuple[Message, list[tuple[str, Blob, str]]]:
    """``message`` with the inline data of each image or file part of at least
    ``threshold`` decoded bytes replaced by a reference ``blob:sha256:<hex>;<media
    type>``, and ``(reference, blob, data URL it replaced)`` for each (the message
    itself when nothing was taken out). Raises :class:`InvalidContent` for bad base64."""
    parts = _parts(getattr(message, "content", None))
    if not parts:
        return message, []
    taken: list[tuple[str, Blob, str]] = []
    out: list[ContentPart] = []
    for part in parts:
        url = _url_of(part)
        found = None if url is None else _split_data_url(url)
        if url is None or found is None or _decoded_size(found[1]) < threshold:
            out.append(part)
            continue
        blob = _blob(found[1], found[0])
        ref = f"{BLOB_PREFIX}{blob.sha256};{found[0]}"
        taken.append((ref, blob, url))
        out.append(_with_url(part, ref))
    if not taken:
        return message, []
    return msgspec.structs.replace(message, content=out), taken


def blob_refs(message: Message) -> list[str]:
    """The blob references of ``message``'s parts, in order."""
    refs: list[str] = []
    for part in _parts(getattr(message, "content", None)) or ():
        url = _url_of(part)
        if url is not None and url.startswith(BLOB_PREFIX):
            refs.append(url)
    return refs


def parse_ref(ref: str) -> tuple[str, str]:
    """The content hash and media type of a blob reference."""
    digest, _, media = ref[len(BLOB_PREFIX) :].partition(";")
    return digest, media or "application/octet-stream"


def join_blobs(message: Message, data_url: Callable[[str], str]) -> Message:
    """``message`` with each blob reference ``ref`` replaced by ``data_url(ref)`` (the
    message itself when it has none)."""
    parts = _parts(getattr(message, "content", None))
    if not parts or not blob_refs(message):
        return message
    out: list[ContentPart] = []
    for part in parts:
        url = _url_of(part)
        out.append(_with_url(part, data_url(url)) if url and url.startswith(BLOB_PREFIX) else part)
    return msgspec.structs.replace(message, content=out)


def blob_data_url(media_type: str, data: bytes) -> str:
    """The ``data:`` URL of ``data`` of ``media_type``."""
    return _data_url(media_type, data)
