"""The prompt layer's leaves of the error tree.

::

    PromptError                   the root (an AgcoreError)
    ├── TemplateSyntaxError       ValueError: the template does not parse
    ├── VariableNotFound          LookupError: a variable is not in the context
    ├── PartialNotFound           LookupError: an included partial is not registered
    ├── NotAnArray                ValueError: a loop over something that is not a list
    ├── TemplateSecurityError     the sandbox refused an operation
    ├── TemplateRecursionError    partials include each other, or recursion is too deep
    ├── TemplateLimitExceeded     a render went past its work or size bound
    ├── TemplateRenderError       any other error while rendering
    └── InvalidSequence           ValueError: a message list breaks the rules

Every template error names the template and, when known, the line (of the
template where it happened: a partial's own name and line for an error inside a
partial).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from .._errors import AgcoreError


class PromptError(AgcoreError):
    """Base of prompt errors. ``template`` and ``line`` locate it when known."""

    kind: ClassVar[str] = "prompt"

    def __init__(
        self, message: str, *, template: str | None = None, line: int | None = None
    ) -> None:
        where = ""
        if template is not None:
            where = f"template {template!r}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(where + message)
        self.message = message
        self.template = template
        self.line = line


class TemplateSyntaxError(PromptError, ValueError):
    """The template does not parse."""

    kind: ClassVar[str] = "template_syntax"


class VariableNotFound(PromptError, LookupError):
    """A variable the template uses is not in the context (strict: no default)."""

    kind: ClassVar[str] = "template_variable_not_found"


class PartialNotFound(PromptError, LookupError):
    """An included partial (or a template asked of a registry) is not registered."""

    kind: ClassVar[str] = "template_partial_not_found"

    def __init__(self, name: str, *, template: str | None = None, line: int | None = None) -> None:
        super().__init__(f"partial {name!r} is not registered", template=template, line=line)
        self.name = name


class NotAnArray(PromptError, ValueError):
    """A ``{{#each}}`` loop over something that is not a list."""

    kind: ClassVar[str] = "template_not_an_array"


class TemplateSecurityError(PromptError):
    """The sandbox refused an operation (private attributes, unsafe calls)."""

    kind: ClassVar[str] = "template_security"


class TemplateRecursionError(PromptError):
    """Partials include each other in a cycle, or rendering recursed too deep."""

    kind: ClassVar[str] = "template_recursion"


class TemplateLimitExceeded(PromptError):
    """A render went past a bound of its ``RenderLimits``; ``limit`` names which:
    ``"work"`` (loop iterations, calls, filters), ``"output"`` (characters of
    output) or ``"value"`` (the size of one value the template made)."""

    kind: ClassVar[str] = "template_limit"

    def __init__(
        self,
        message: str,
        *,
        limit: Literal["work", "output", "value"] = "work",
        template: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message, template=template, line=line)
        self.limit = limit


class TemplateRenderError(PromptError):
    """Any other error while rendering (a filter's error, a bad operation)."""

    kind: ClassVar[str] = "template_render"


class InvalidSequence(PromptError, ValueError):
    """A message list breaks the rules of :func:`validate_messages`; ``index``
    is the offending message's position (None for the empty list)."""

    kind: ClassVar[str] = "invalid_message_sequence"

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message if index is None else f"message[{index}]: {message}")
        self.index = index
