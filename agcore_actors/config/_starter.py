"""The commented starter file ``agcore-actors config init`` writes (:func:`starter_text`).

It documents every table; the keys left commented out show their defaults. As written it
configures no provider, so the environment (``OPENAI_API_KEY`` ...) or else the embedded
model answers, and keeps sessions in ``sessions.db`` next to it.
"""

from __future__ import annotations

__all__ = ["starter_text"]

_STARTER = """\
# agcore-actors configuration. Reference: docs/configuration.md
# Check it with `agcore-actors config check`. Every key can also be set from the
# environment: AGCORE_<TABLE>__<KEY>, e.g. AGCORE_HOST__MAX_SESSIONS=100.

# The agent new sessions start with, and the provider of agents that name none
# (default: the first of each table).
# default_agent = "assistant"
# default_provider = "openai"

# ---------------------------------------------------------------------------------------
# Providers. With none configured here, OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL
# configure "openai", ANTHROPIC_API_KEY configures "anthropic", and without any of them
# the embedded local model answers (pip install 'agcore-actors[local]').
#
# [providers.openai]
# kind = "openai"                       # any OpenAI-compatible endpoint
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"        # the key from this variable, or
# api_key = "sk-..."                    # the key itself (keep this file private then)
# model = "gpt-4o-mini"
# headers = { "OpenAI-Organization" = "org-..." }
# extra_body = {}
# max_concurrency = 256                 # calls at once; default: [host] max_turns_in_flight
#
# [providers.claude]
# kind = "anthropic"
# api_key_env = "ANTHROPIC_API_KEY"     # or api_key = "..."
# model = "claude-sonnet-4-5"
# max_tokens = 4096
# max_concurrency = 256
#
# [providers.local]
# kind = "local"                        # the embedded model, started and supervised here
# model = "default"                     # "default": Qwen2.5-Coder-1.5B, "small": 0.5B
# gguf = "models/my-model.gguf"         # or a GGUF file of your own
# chat_template = "my-template.jinja"   # a chat template for that file
# n_ctx = 8192
# threads = 2                           # unset: the cores free at start
# start_timeout = 120.0
# cache_dir = "~/.cache/agcore-actors/models"
# download = true
# python = "/path/to/python"            # a Python that imports xllamacpp
# max_concurrency = 256

# ---------------------------------------------------------------------------------------
# Agents, by name.
[agents.assistant]
instructions = "You are a helpful assistant."
# description = "Answers questions."
# provider = "openai"                   # a [providers] table
# model = ""                            # default: the provider's
# temperature = 0.2
# max_tokens = 1024
# extra_body = {}
# top_p = 0.9
# stop = ["END"]
# seed = 7
# tool_choice = "auto"                  # auto, none, required, or a tool's name
# parallel_tool_calls = true
# reasoning_effort = "low"              # minimal, low, medium, high
# thinking_budget = 2048                # Anthropic's thinking budget_tokens
# fallback = ["local"]                  # "provider" or "provider/model", tried in order
# fallback_on = ["rate_limit", "server_error", "timeout", "context_length", "connection"]
# tools = ["search"]                    # absent (and no mcp_servers): every tool
# mcp_servers = ["time"]                # the tools of these [mcpServers]
# subagents = []                        # agents it may call as tools
# Limits:
# max_turns = 50                        # model calls in one turn
# max_tool_turns = 10                   # rounds of tool calls in one turn
# turn_timeout = 600.0                  # seconds; inf: no deadline
# tool_timeout = 60.0
# approval_timeout = 300.0
# output_retries = 2
# max_repeated_calls = 3
# approvals = "wait"                   # "suspend": a turn waiting for approval is stored
# interrupted = "repair"                # "resume": a turn cut off by a crash goes on
# elicitations = "wait"                 # "suspend": a turn an MCP server asks something is stored
# max_media_part_bytes = 20971520      # one image, audio or file part (decoded)
# max_media_message_bytes = 52428800   # all the media of one message
# Budgets (absent: no limit); session_* count the whole session, kept in the store:
# turn_tokens = 200000
# turn_cost = 0.5                       # at the prices below
# session_tokens = 5000000
# session_cost = 20.0
# tool_calls_per_turn = 50
# concurrent_tool_calls = 8
# Per million tokens, by "provider/model" or "model" (also cache_read, cache_write):
# prices = { "gpt-4o-mini" = { input = 0.15, output = 0.6 } }

# ---------------------------------------------------------------------------------------
# MCP servers, in the mcpServers shape of Claude Desktop: command (stdio) or url (HTTP).
#
# [mcpServers.time]
# command = "uvx"
# args = ["mcp-server-time", "--local-timezone", "UTC"]
# env = { TZ = "UTC" }                  # values are secrets: never shown
# cwd = "/srv"
# inherit_env = ["LANG"]                # besides HOME, LOGNAME, PATH, SHELL, TERM, USER
# require_approval = true               # every tool asks first (unset: destructive ones)
# resources_tool = true                 # a time-read_resource tool over its resources
# parallel_sessions = true              # sessions' calls at once (no elicitation routing)
# disabled = false
# type = "stdio"
#
# [mcpServers.remote]
# url = "http://127.0.0.1:8000/mcp"
# headers = { Authorization = "Bearer ${env:REMOTE_TOKEN}" }  # ${VAR}: from the environment
# oauth = { scope = "read" }            # OAuth 2.1 instead: `agcore-actors mcp login remote`
# disabled = false
# type = "http"

# ---------------------------------------------------------------------------------------
[store]
path = "sessions.db"                    # SQLite, next to this file; remove for memory
# synchronous = "FULL"                  # or "NORMAL"

[host]
# max_sessions = 10000
# idle_ttl = 600.0
# max_turns_in_flight = 256
# max_queued = 4
# history_tail = 200
# crash_limit = 3
# crash_window = 60.0
# drain_timeout = 30.0

[cluster]                               # several hosts sharing one store
# enabled = true                       # default: with a PostgreSQL store
# host_id = "host-a"                    # default: host- and 12 random hex digits
# address = "http://10.0.0.2:8080"      # where other hosts forward to
# lease_ttl = 10.0
# renew_interval = 2.0
# fence_margin = 2.0

[retry]
# max_retries = 3
# base_delay = 1.0
# max_delay = 30.0
# jitter = 0.25
# max_retry_after = 120.0

[timeouts]
# attempt = 120.0
# idle = 120.0
# connect = 10.0
# call = 600.0

[logging]
# level = "warning"                     # debug, info, warning, error
# format = "text"                       # or "json"

[telemetry]
# tracing = false                       # true: OTLP spans (the otel extra; OTEL_* variables)
"""


def starter_text() -> str:
    """The starter file: valid as it is, every table and key shown with its default."""
    return _STARTER
