"""Static permission policy, pure.

``check_permissions`` applies, in this order:

1. the first declared permission that is in ``denied`` is refused
   (``denied`` wins over ``allowed``);
2. a tool that declares nothing is judged by ``allow_unspecified``;
3. an empty ``allowed`` list is judged by ``allow_unspecified`` (it does not
   mean "allow everything");
4. otherwise ``allowed`` is a whitelist: the first declared permission not
   in it is refused;
5. else the call is allowed.

Defaults: ``allowed = [Read, Network]``, ``denied = [Delete, Shell]``,
``allow_unspecified = True``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._errors import PermissionDenied

#: The built-in permissions; anything else is a custom, namespaced string
#: such as ``"db:read"`` (compared by exact equality).
READ = "Read"
WRITE = "Write"
DELETE = "Delete"
NETWORK = "Network"
SHELL = "Shell"
FILE_SYSTEM = "FileSystem"
BUILTIN_PERMISSIONS = frozenset({READ, WRITE, DELETE, NETWORK, SHELL, FILE_SYSTEM})

#: What a refusal names when the tool declared nothing.
UNSPECIFIED = "Unspecified"


def _tuple(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen
class PermissionConfig:
    """The rules :func:`check_permissions` applies (see the module docstring)."""

    #: A whitelist of permissions; empty means "judge by ``allow_unspecified``".
    allowed: tuple[str, ...] = attrs.field(default=(READ, NETWORK), converter=_tuple)
    #: Permissions that are always refused (they win over ``allowed``).
    denied: tuple[str, ...] = attrs.field(default=(DELETE, SHELL), converter=_tuple)
    #: Whether a tool that declares nothing (or an empty whitelist) is allowed.
    allow_unspecified: bool = True


def check_permissions(config: PermissionConfig, declared: Sequence[str]) -> str | None:
    """The permission that refuses ``declared`` (or :data:`UNSPECIFIED`), or None if allowed."""
    for perm in declared:
        if perm in config.denied:
            return perm
    if not declared or not config.allowed:
        return None if config.allow_unspecified else UNSPECIFIED
    for perm in declared:
        if perm not in config.allowed:
            return perm
    return None


@attrs.frozen
class PermissionChecker:
    """Raises :class:`PermissionDenied` for what :func:`check_permissions` refuses."""

    config: PermissionConfig = attrs.field(factory=PermissionConfig)

    def check(self, tool_name: str, declared: Sequence[str]) -> None:
        """Raise :class:`PermissionDenied` naming the refused permission, if any."""
        refused = check_permissions(self.config, declared)
        if refused is not None:
            raise PermissionDenied(tool_name, refused)
