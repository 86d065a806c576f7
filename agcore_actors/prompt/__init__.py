"""Prompts: Jinja2 templates in a sandbox, a registry of partials, and a composer.

::

    registry = TemplateRegistry().register("persona", "You are {{ name }}.")
    messages = (
        PromptComposer()
        .system_template(registry.get("persona"), {"name": "a helpful assistant"})
        .user("What is the weather in Paris?")
        .assistant(tool_calls=[tool_call("call_1", "weather", {"city": "Paris"})])
        .tool("call_1", "Sunny, 25°C")
        .validate()
        .build()
    )
"""

from .._exports import publish
from ._composer import (
    PromptComposer,
    audio_part,
    file_part,
    image_part,
    text_part,
    tool_call,
    validate_messages,
)
from ._errors import (
    InvalidSequence,
    NotAnArray,
    PartialNotFound,
    PromptError,
    TemplateLimitExceeded,
    TemplateRecursionError,
    TemplateRenderError,
    TemplateSecurityError,
    TemplateSyntaxError,
    VariableNotFound,
)
from ._sandbox import RenderLimits
from ._seed_syntax import from_seed_syntax
from ._template import PromptTemplate, TemplateRegistry, context_from_json

__all__ = [
    "InvalidSequence",
    "NotAnArray",
    "PartialNotFound",
    "PromptComposer",
    "PromptError",
    "PromptTemplate",
    "RenderLimits",
    "TemplateLimitExceeded",
    "TemplateRecursionError",
    "TemplateRegistry",
    "TemplateRenderError",
    "TemplateSecurityError",
    "TemplateSyntaxError",
    "VariableNotFound",
    "audio_part",
    "context_from_json",
    "file_part",
    "from_seed_syntax",
    "image_part",
    "text_part",
    "tool_call",
    "validate_messages",
]

publish(__name__, __all__)
