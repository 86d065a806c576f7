"""Tools: the tool protocol, function tools, the registry, permissions and approval, and
the ToolExecutor actor.

- the actor: :class:`ToolExecutor`, built by :func:`tool_executor_spec` with an
  :class:`ExecutorConfig`; its protocol is :mod:`agcore_actors.tools.messages` (import
  it qualified, ``from agcore_actors.tools import messages as tm``; its main types are
  also here);
- tools: the :class:`Tool` protocol, :func:`function_tool` for typed Python functions,
  the :class:`ToolRegistry`;
- gates: :class:`PermissionChecker` over a :class:`PermissionConfig`, and approvers;
- child processes for tools: :func:`run_process` and :func:`run_process_sync` (each in a
  process group of its own, killed as a whole when its call is cancelled or times out);
- the pure rules behind them: :mod:`agcore_actors.tools.policy`.
"""

from .._exports import publish
from ._approval import ApprovalCallback, Approver
from ._deps import RunContext
from ._errors import (
    BatchInProgress,
    CallDeferred,
    DuplicateTool,
    ExecutionFailed,
    InvalidArguments,
    OtherToolError,
    PermissionDenied,
    ToolCancelled,
    ToolError,
    ToolIoError,
    ToolNotFound,
    ToolThreadsExhausted,
    ToolTimeout,
)
from ._executor import ExecutorConfig, ToolExecutor, tool_executor_spec
from ._permission import (
    DELETE,
    FILE_SYSTEM,
    NETWORK,
    READ,
    SHELL,
    WRITE,
    PermissionChecker,
    PermissionConfig,
)
from ._process import run_process, run_process_sync
from ._registry import ToolRegistry
from ._threads import ToolThreads
from ._tool import CancelToken, FunctionTool, Tool, ToolContext, function_tool, schema_of
from .messages import (
    ApprovalDecision,
    ApprovalRequest,
    CancelBatch,
    ExecuteTools,
    FetchResults,
    ToolCall,
    ToolExecutorMsg,
    ToolProgress,
    ToolResult,
    ToolResults,
    ToolStatus,
)

__all__ = [
    "DELETE",
    "FILE_SYSTEM",
    "NETWORK",
    "READ",
    "SHELL",
    "WRITE",
    "ApprovalCallback",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "BatchInProgress",
    "CallDeferred",
    "CancelBatch",
    "CancelToken",
    "DuplicateTool",
    "ExecuteTools",
    "ExecutionFailed",
    "ExecutorConfig",
    "FetchResults",
    "FunctionTool",
    "InvalidArguments",
    "OtherToolError",
    "PermissionChecker",
    "PermissionConfig",
    "PermissionDenied",
    "RunContext",
    "Tool",
    "ToolCall",
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolExecutor",
    "ToolExecutorMsg",
    "ToolIoError",
    "ToolNotFound",
    "ToolProgress",
    "ToolRegistry",
    "ToolResult",
    "ToolResults",
    "ToolStatus",
    "ToolThreads",
    "ToolThreadsExhausted",
    "ToolTimeout",
    "function_tool",
    "run_process",
    "run_process_sync",
    "schema_of",
    "tool_executor_spec",
]

publish(__name__, __all__)
