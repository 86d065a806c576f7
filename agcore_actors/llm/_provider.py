"""The provider protocol, the read limits a stream gets, and the provider registry.

A provider is configuration plus conversion: it turns a :class:`ChatRequest` into
one HTTP call on a client it is given (the :class:`ProviderActor` owns the client),
and the answer into a :class:`ChatResponse` or a stream of :class:`ChatDelta` s. It
does not retry, wait or account usage: the one retry loop (:class:`Caller`) does.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import attrs

from ._errors import UnknownProviderError
from ._request import ChatRequest
from ._stream import ChatDelta
from .messages import ChatResponse

if TYPE_CHECKING:
    import httpx2


@attrs.frozen
class ReadLimits:
    """How long one streamed attempt may wait once its response has started.

    The retry loop hands one to :meth:`Provider.stream`; the provider applies it where
    it waits (at the network read), so no cancel scope is needed per event.
    """

    #: The longest silence between two events, in seconds (None: no limit).
    idle: float | None = None
    #: The trio time by which the whole call must end (``math.inf``: none).
    deadline: float = math.inf
    #: The call's limit in seconds, for the error of a missed deadline.
    call_seconds: float = math.inf


#: No limits at all.
NO_READ_LIMITS = ReadLimits()


#: How a provider is asked for structured output: the server's ``response_format``
#: (``json_schema``), a forced call of a ``final_result`` tool (``tool``), or the schema
#: in the prompt and the answer's JSON parsed from its text (``prompted``).
OutputMode = Literal["json_schema", "tool", "prompted"]


def output_mode_of(provider: object) -> OutputMode:
    """The structured-output mode ``provider`` declares (``structured_output``), else
    ``json_schema``."""
    mode = getattr(provider, "structured_output", "json_schema")
    if mode == "tool":
        return "tool"
    return "prompted" if mode == "prompted" else "json_schema"


@runtime_checkable
class Provider(Protocol):
    """What the retry loop and the ProviderActor need of a provider.

    Errors: every failure is a typed :class:`~agcore_actors.llm.LlmError` (a bug in
    the provider is anything else, and crashes the actor). Cancellation: both
    methods may be cancelled at any await; they close what they opened.
    """

    @property
    def name(self) -> str:
        """The name the provider is registered under by default."""
        ...

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        """One non-streamed attempt."""
        ...

    def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        """One streamed attempt as an async generator of deltas.

        It ends after the provider's end marker, raises :class:`StreamError` when
        the stream breaks off, and :class:`LlmTimeoutError` when ``limits`` run out
        (``scope="idle"`` or ``"call"``). Closing it early closes the response.
        """
        ...


class ProviderRegistry:
    """Providers by name, and an optional default.

    ``register`` overwrites a name silently and never changes the default;
    ``set_default`` of an unknown name raises :class:`UnknownProviderError`;
    ``get_default`` is None until a default is set.
    """

    __slots__ = ("_default", "_providers")

    def __init__(self) -> None:
        self._providers: dict[str, Provider] = {}
        self._default: str | None = None

    def register(self, provider: Provider, name: str | None = None) -> ProviderRegistry:
        """Add ``provider`` under ``name`` (default: its own); returns the registry."""
        self._providers[name or provider.name] = provider
        return self

    def set_default(self, name: str) -> None:
        """Make ``name`` the provider used when a request names none."""
        if name not in self._providers:
            raise UnknownProviderError(name)
        self._default = name

    def get(self, name: str) -> Provider | None:
        """The provider called ``name``, or None."""
        return self._providers.get(name)

    def get_default(self) -> Provider | None:
        """The default provider, or None."""
        return None if self._default is None else self._providers.get(self._default)

    @property
    def default_name(self) -> str | None:
        """The default provider's name, or None."""
        return self._default

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._providers)

    def resolve(self, name: str | None) -> tuple[str, Provider]:
        """The named provider, or the default (the only one, when there is one)."""
        if name is None:
            name = self._default
            if name is None and len(self._providers) == 1:
                name = next(iter(self._providers))
            if name is None:
                raise UnknownProviderError(None)
        provider = self._providers.get(name)
        if provider is None:
            raise UnknownProviderError(name)
        return name, provider
