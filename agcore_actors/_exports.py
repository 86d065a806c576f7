"""Public module paths for public names (imports nothing of ours).

A class defined in ``agcore_actors.llm._errors`` and exported by
``agcore_actors.llm`` should say ``agcore_actors.llm.RateLimitError`` in reprs and
tracebacks, where users look for it, not the private module it lives in. Each public
module calls :func:`publish` as its last statement (as trio does).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["publish"]


def publish(module_name: str, names: Iterable[str]) -> None:
    """Give the classes and functions in ``names`` the public path ``module_name``.

    Only objects defined in a private module of this library (a ``_`` component in
    their module path) are moved, so a name re-exported by a second public module keeps
    the path of its first public home. A class moves only if every one of its own
    annotations also resolves in the public module (exceptions always move): msgspec,
    attrs and cattrs resolve string annotations in ``sys.modules[cls.__module__]``, and
    a move must never break that.
    """
    namespace: dict[str, Any] = vars(sys.modules[module_name])
    for name in names:
        obj = namespace[name]
        module = getattr(obj, "__module__", None)
        if not isinstance(module, str) or not module.startswith("agcore_actors."):
            continue
        if not any(part.startswith("_") for part in module.split(".")):
            continue
        is_error = isinstance(obj, type) and issubclass(obj, BaseException)
        if isinstance(obj, type) and not is_error and not _annotations_resolve(obj, namespace):
            continue
        if isinstance(obj, type) or callable(obj):
            try:
                obj.__module__ = module_name
            except (AttributeError, TypeError):  # a builtin or a frozen object: leave it
                continue


def _annotations_resolve(cls: type, namespace: dict[str, Any]) -> bool:
    """Whether every string annotation of ``cls`` evaluates in ``namespace``.

    A name an annotation needs that the public module lacks (``Callable``, ``msgspec``)
    is first copied there from the class's own module, so the answer is yes whenever the
    names do not clash.
    """
    home = vars(sys.modules[cls.__module__])
    for annotation in vars(cls).get("__annotations__", {}).values():
        if not isinstance(annotation, str):
            continue
        try:
            code = compile(annotation, "<annotation>", "eval")
        except SyntaxError:
            return False
        for name in code.co_names:
            if name in namespace or name in vars(builtins):
                continue
            if name in home:
                namespace[name] = home[name]
        try:
            eval(code, namespace, dict(vars(cls)))
        except Exception:
            return False
    return True
