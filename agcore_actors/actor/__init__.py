"""The domain-free actor runtime on trio: refs, mailboxes, supervision, system.

See ``docs/architecture.md`` for the model and the guarantees.
"""

from ._actor import Actor, ActorContext
from ._deadletters import DeadLetter
from ._errors import (
    ActorCrashed,
    ActorError,
    ActorStopped,
    AskTimeout,
    DuplicateName,
    MailboxFull,
    NoSuchActor,
    SupervisorGaveUp,
    UnencodableMessage,
)
from ._message import Request, StreamRequest
from ._node import ActorInfo, State
from ._policy import NO_BACKOFF, Backoff, Intensity, Restart, Strategy
from ._ref import ActorRef, EventStream
from ._spec import ChildSpec, SupervisorSpec
from ._supervisor import Supervisor
from ._system import ActorSystem

__all__ = [
    "NO_BACKOFF",
    "Actor",
    "ActorContext",
    "ActorCrashed",
    "ActorError",
    "ActorInfo",
    "ActorRef",
    "ActorStopped",
    "ActorSystem",
    "AskTimeout",
    "Backoff",
    "ChildSpec",
    "DeadLetter",
    "DuplicateName",
    "EventStream",
    "Intensity",
    "MailboxFull",
    "NoSuchActor",
    "Request",
    "Restart",
    "State",
    "Strategy",
    "StreamRequest",
    "Supervisor",
    "SupervisorGaveUp",
    "SupervisorSpec",
    "UnencodableMessage",
]
