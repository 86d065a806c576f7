"""A test kit for code that embeds the actor runtime.

- :class:`TrioDriver` drives one long-lived trio run step by step from
  synchronous code (hypothesis state machines), with virtual time standing
  still between steps.
- :func:`virtual_clock`, :func:`settle`, :func:`advance` and :func:`elapsed`
  for tests in virtual time.
- :class:`Probe`, a test actor that crashes, exits or sleeps on request and
  records its starts and stops in an :class:`EventLog`.
- Scenario operations (:class:`CrashChild`, ...) and :func:`apply_operation`
  to apply them to a supervisor of probes; hypothesis strategies for specs
  and operations are in :mod:`agcore_actors.testing.strategies`, which is the
  only module here that needs hypothesis.
- Errors, all under :class:`KitError` (an ``AgcoreError``): :class:`StepTimeout`,
  :class:`TrioRunEnded` and :class:`ProbeCrash`.
- :func:`scripted_host`: a running :class:`~agcore_actors.agent.SessionHost` on a
  scripted model in one call, :func:`count_user_turns` (a script that tells what the model saw),
  :func:`run_virtual` to run a scenario in virtual time,
  and :class:`Visit` (drawn by ``strategies.visits``) for a bot's traffic.
- :class:`ScriptedProvider`, a model provider whose replies and streamed attempts
  follow a script (:class:`ScriptedReply`, :class:`ScriptedToolCall`), on trio's
  clock, to run behind the real ``ProviderActor``.
"""

from .._exports import publish
from ._driver import DEFAULT_TIMEOUT, TrioDriver
from ._errors import KitError, ProbeCrash, StepTimeout, TrioRunEnded
from ._host import BOT, Visit, count_user_turns, run_virtual, scripted_host
from ._probe import (
    Crash,
    EventLog,
    Exit,
    Ping,
    Probe,
    ProbeEvent,
    ProbeMsg,
    Sleep,
    stop_reason,
)
from ._scenario import (
    AdvanceTime,
    CrashChild,
    ExitChild,
    Operation,
    StartChild,
    StopChild,
    apply_operation,
    running_children,
)
from ._scripted import ScriptedProvider, ScriptedReply, ScriptedToolCall, ScriptItem
from ._time import Elapsed, advance, elapsed, settle, virtual_clock

__all__ = [
    "BOT",
    "DEFAULT_TIMEOUT",
    "AdvanceTime",
    "Crash",
    "CrashChild",
    "Elapsed",
    "EventLog",
    "Exit",
    "ExitChild",
    "KitError",
    "Operation",
    "Ping",
    "Probe",
    "ProbeCrash",
    "ProbeEvent",
    "ProbeMsg",
    "ScriptItem",
    "ScriptedProvider",
    "ScriptedReply",
    "ScriptedToolCall",
    "Sleep",
    "StartChild",
    "StepTimeout",
    "StopChild",
    "TrioDriver",
    "TrioRunEnded",
    "Visit",
    "advance",
    "apply_operation",
    "count_user_turns",
    "elapsed",
    "run_virtual",
    "running_children",
    "scripted_host",
    "settle",
    "stop_reason",
    "virtual_clock",
]

publish(__name__, __all__)
