"""Typed errors of templates and message composition.

Every template error names the template and, when known, the line (of the
template where it happened: a partial's own name and line for an error
inside a partial).
"""

from __future__ import annotations


class PromptError(Exception):
    """Base of prompt errors. ``template`` and ``line`` locate it when known."""

    def __init__(self, message: str, *, template: str | None = None, line: int | None = None):
        where = ""
        if template is not None:
            where = f"template {template!r}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(where + message)
        self.message = message
        self.template = template
        self.line = line


class TemplateSyntaxError(PromptError):
    """The template does not parse (the seed's ``Parse``)."""


class VariableNotFound(PromptError):
    """A variable the template uses is not in the context (strict: no default)."""


class PartialNotFound(PromptError):
    """An included partial (or a template asked of a registry) is not registered."""

    def __init__(self, name: str, *, template: str | None = None, line: int | None = None):
        super().__init__(f"partial {name!r} is not registered", template=template, line=line)
        self.name = name


class NotAnArray(PromptError):
    """A loop over something that is not a list (the seed's ``#each`` rule)."""


class TemplateSecurityError(PromptError):
    """The sandbox refused an operation (private attributes, unsafe calls)."""


class TemplateRecursionError(PromptError):
    """Partials include each other in a cycle (the seed recursed without bound)."""


class TemplateRenderError(PromptError):
    """Any other error while rendering (a filter's error, a bad operation)."""


class InvalidSequence(PromptError):
    """A message list breaks the rules of :func:`validate_messages`; ``index``
    is the offending message's position (None for the empty list)."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message if index is None else f"message[{index}]: {message}")
        self.index = index
