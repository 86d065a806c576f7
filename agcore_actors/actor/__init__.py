"""The domain-free actor runtime on trio: refs, mailboxes, supervision, system.

What a user of the runtime needs is here: :class:`Actor` and its
:class:`ActorContext`, :class:`ActorRef`, :class:`ActorSystem`, specs and
:class:`Supervisor`, the message bases :class:`Request` and
:class:`StreamRequest`, the errors (all under :class:`ActorError`), and the
supervision policy values a spec takes. Pure policy functions are in
:mod:`agcore_actors.actor.policy`; mechanics for code that builds on the
runtime itself (cancellation helpers, strict-mode copies, message type
checks) in :mod:`agcore_actors.actor.lowlevel`.

See ``docs/architecture.md`` for the model and the guarantees.
"""

from .._exports import publish
from ._actor import Actor, ActorContext
from ._breaker import CircuitBreaker
from ._deadletters import DeadLetter, DeadLetterReason
from ._errors import (
    ActorCrashed,
    ActorError,
    ActorParked,
    ActorStopped,
    AskTimeout,
    DuplicateName,
    ForeignThread,
    MailboxFull,
    NoSuchActor,
    StartTimeout,
    SupervisorGaveUp,
    UnencodableMessage,
    UnknownMessage,
    WouldDeadlock,
    WrongRequestKind,
)
from ._isolation import DEFAULT_ISOLATION
from ._message import Request, StreamRequest
from ._node import ActorInfo, State
from ._policy import NO_BACKOFF, Backoff, Intensity, Restart, Strategy
from ._ref import ActorRef, EventStream
from ._spec import ChildSpec, SupervisorSpec
from ._supervisor import Supervisor
from ._system import ActorSystem

__all__ = [
    "DEFAULT_ISOLATION",
    "NO_BACKOFF",
    "Actor",
    "ActorContext",
    "ActorCrashed",
    "ActorError",
    "ActorInfo",
    "ActorParked",
    "ActorRef",
    "ActorStopped",
    "ActorSystem",
    "AskTimeout",
    "Backoff",
    "ChildSpec",
    "CircuitBreaker",
    "DeadLetter",
    "DeadLetterReason",
    "DuplicateName",
    "EventStream",
    "ForeignThread",
    "Intensity",
    "MailboxFull",
    "NoSuchActor",
    "Request",
    "Restart",
    "StartTimeout",
    "State",
    "Strategy",
    "StreamRequest",
    "Supervisor",
    "SupervisorGaveUp",
    "SupervisorSpec",
    "UnencodableMessage",
    "UnknownMessage",
    "WouldDeadlock",
    "WrongRequestKind",
]

publish(__name__, __all__)
