"""The agent layer: agents, the Session actor and its turn loop, plans.

A :class:`Session` is one conversation. It runs a turn by sending messages to the
runtime's actors — the provider, the tool executor, the compactor — and persists every
turn to the session store, so a cancelled, failed or crashed turn still leaves a
transcript any provider accepts. The protocol is in :mod:`agcore_actors.agent.messages`
(use it qualified: ``from agcore_actors.agent import messages as am``).
"""

from .._exports import publish
from . import messages, policy
from ._budget import Budget
from ._bundle import (
    AgentBuilder,
    RuntimeBundle,
    session_approver,
    session_elicitor,
    session_name,
    session_progress,
    session_spec,
)
from ._config import Agent, AgentConfig, ModelSettings, PromptContext, ReasoningEffort
from ._errors import (
    AgentConfigError,
    AgentError,
    GuardrailBlocked,
    HookBlocked,
    HookFailed,
    LimitExceeded,
    OutputValidationError,
    PeerFailed,
    PlanParseError,
    SessionBusy,
    SessionParked,
    SessionSuspended,
    StaleAnswer,
    TurnTimeout,
)
from ._fallback import FallbackKind
from ._guards import (
    Block,
    Deny,
    InputGuardrail,
    OutputGuardrail,
    Replace,
    Rewrite,
    ToolCallInfo,
    ToolHooks,
    ToolOutcome,
)
from ._hooks import TurnHooks
from ._host import SessionHost
from ._host_config import HostConfig, HostSnapshot
from ._memories import MemoryScope, MemoryTool, memory_tools
from ._plan import JsonPlanParser, Plan, PlanParser, Step, StepStatus
from ._prompt import facts_block, system_prompt
from ._retrieve import RetrieveTool, retrieve_tool
from ._sampling import SamplingPolicy, session_sampler
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
    "Block",
    "Budget",
    "Deny",
    "FallbackKind",
    "GuardrailBlocked",
    "HookBlocked",
    "HookFailed",
    "HostConfig",
    "HostSnapshot",
    "InputGuardrail",
    "JsonPlanParser",
    "LimitExceeded",
    "MemoryScope",
    "MemoryTool",
    "ModelSettings",
    "OutputGuardrail",
    "OutputValidationError",
    "PeerFailed",
    "Plan",
    "PlanParseError",
    "PlanParser",
    "PromptContext",
    "ReasoningEffort",
    "Replace",
    "RetrieveTool",
    "Rewrite",
    "RuntimeBundle",
    "SamplingPolicy",
    "Session",
    "SessionBusy",
    "SessionHost",
    "SessionParked",
    "SessionState",
    "SessionSuspended",
    "StaleAnswer",
    "Step",
    "StepStatus",
    "StoreTurns",
    "TaskAgent",
    "ToolCallInfo",
    "ToolHooks",
    "ToolOutcome",
    "TurnHooks",
    "TurnStore",
    "TurnTimeout",
    "execute_plan",
    "facts_block",
    "memory_tools",
    "messages",
    "policy",
    "retrieve_tool",
    "session_approver",
    "session_elicitor",
    "session_name",
    "session_progress",
    "session_sampler",
    "session_spec",
    "synthetic_results",
    "system_prompt",
    "transcript_errors",
    "unanswered_calls",
]

publish(__name__, __all__)
