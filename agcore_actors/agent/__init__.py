"""The agent layer: agents, the Session actor and its turn loop, plans.

A :class:`Session` is one conversation. It runs a turn by sending messages to the
runtime's actors — the provider, the tool executor, the compactor — and persists every
turn to the session store, so a cancelled, failed or crashed turn still leaves a
transcript any provider accepts. The protocol is in :mod:`agcore_actors.agent.messages`
(use it qualified: ``from agcore_actors.agent import messages as am``).
"""

from .._exports import publish
from . import messages
from ._bundle import AgentBuilder, RuntimeBundle, session_approver, session_name, session_spec
from ._config import Agent, AgentConfig, ModelSettings, PromptContext
from ._errors import (
    AgentConfigError,
    AgentError,
    HookBlocked,
    LimitExceeded,
    OutputValidationError,
    PeerFailed,
    PlanParseError,
    SessionBusy,
    SessionParked,
    TurnTimeout,
)
from ._hooks import TurnHooks
from ._host import SessionHost
from ._host_config import HostConfig, HostSnapshot
from ._plan import JsonPlanParser, Plan, PlanParser, Step, StepStatus
from ._prompt import facts_block, system_prompt
from ._retrieve import RetrieveTool, retrieve_tool
from ._session import Session
from ._store_port import SessionState, StoreTurns, TurnStore
from ._task import TaskAgent, execute_plan
from ._transcript import synthetic_results, transcript_errors, unanswered_calls

__all__ = [
    "Agent",
    "AgentBuilder",
    "AgentConfig",
    "AgentConfigError",
    "AgentError",
    "HookBlocked",
    "HostConfig",
    "HostSnapshot",
    "JsonPlanParser",
    "LimitExceeded",
    "ModelSettings",
    "OutputValidationError",
    "PeerFailed",
    "Plan",
    "PlanParseError",
    "PlanParser",
    "PromptContext",
    "RetrieveTool",
    "RuntimeBundle",
    "Session",
    "SessionBusy",
    "SessionHost",
    "SessionParked",
    "SessionState",
    "Step",
    "StepStatus",
    "StoreTurns",
    "TaskAgent",
    "TurnHooks",
    "TurnStore",
    "TurnTimeout",
    "execute_plan",
    "facts_block",
    "messages",
    "retrieve_tool",
    "session_approver",
    "session_name",
    "session_spec",
    "synthetic_results",
    "system_prompt",
    "transcript_errors",
    "unanswered_calls",
]

publish(__name__, __all__)
