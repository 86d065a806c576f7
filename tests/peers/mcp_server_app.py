"""A small MCP server for the tests, on the official ``mcp`` SDK (2.x or 1.x).

Run by a peer interpreter (``.peers/mcp2`` or ``.peers/mcp1``), never by the
project's own: ``python server_app.py stdio``, ``python server_app.py http PORT`` or
(2.x only) ``python server_app.py http-resumable PORT``, with an event store, so that
its response streams can be resumed.
The same tools exist on both SDK lines, so the tests compare their behaviour.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path, and its neighbour
# tests/peers/mcp.py would shadow the SDK's ``mcp`` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError

    SDK = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

    SDK = 1


def build(host: str = "127.0.0.1", port: int = 8000) -> Any:
    # 1.x takes host and port in the constructor, 2.x in run().
    mcp = Server("agcore-test") if SDK == 2 else Server("agcore-test", host=host, port=port)

    @mcp.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(description="Sleep for some seconds, then answer.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool(description="Log a message and report progress, then answer.")
    async def chatty(message: str, ctx: Context) -> str:
        await ctx.info(message)
        await ctx.report_progress(1, 2)
        return f"logged {message}"

    @mcp.tool(description="Fail with an error result.")
    def fail(message: str) -> str:
        raise ValueError(message)

    @mcp.tool(description="Kill the server process at once.")
    def crash() -> str:
        os._exit(3)

    @mcp.tool(description="Print the environment variable NAME (or '<unset>').")
    def getenv(name: str) -> str:
        return os.environ.get(name, "<unset>")

    @mcp.tool(description="The server's process id.")
    def pid() -> int:
        return os.getpid()

    @mcp.tool(description="Stop the server process (SIGSTOP): it answers nothing, not even EOF.")
    def hang() -> str:
        os.kill(os.getpid(), signal.SIGSTOP)
        return "resumed"

    @mcp.tool(description="Return a string of SIZE characters.")
    def big(size: int) -> str:
        return "x" * size

    @mcp.tool(description="Fail with an error that quotes the environment variable NAME.")
    def leak(name: str) -> str:
        # An anticipated failure: the SDK passes its text to the client.
        raise ToolError(f"the server rejected credential {os.environ.get(name)}")

    @mcp.tool(description="Write to stderr.")
    def stderr(text: str) -> str:
        print(text, file=sys.stderr, flush=True)
        return "ok"

    @mcp.tool(description="Register a new tool NAME and notify the client.")
    async def grow(name: str, ctx: Context) -> str:
        mcp.add_tool(lambda: name, name=name, description=f"added tool {name}")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @mcp.tool(description="The client's roots (a roots/list request to the client).")
    async def roots(ctx: Context) -> str:
        listed = await ctx.session.list_roots()
        return " ".join(str(root.uri) for root in listed.roots)

    @mcp.tool(description="Ask the person for a name (an elicitation/create request).")
    async def ask(ctx: Context) -> str:
        from pydantic import BaseModel

        class Answer(BaseModel):
            name: str

        result = await ctx.elicit("What is your name?", Answer)
        return f"{result.action} {result.data.name}" if result.action == "accept" else result.action

    @mcp.tool(description="Ask the client's model PROMPT (a sampling/createMessage request).")
    async def sample(prompt: str, ctx: Context) -> str:
        from mcp.types import SamplingMessage, TextContent

        try:  # the SDK's protocol error: MCPError in 2.x, McpError in 1.x
            from mcp.shared.exceptions import MCPError as McpError
        except ImportError:
            from mcp.shared.exceptions import McpError  # type: ignore[attr-defined,no-redef]

        message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
        try:
            result = await ctx.session.create_message(
                [message],
                max_tokens=64,
                system_prompt="Answer in one line.",
                related_request_id=ctx.request_id,
            )
        except McpError as exc:
            return f"refused ({exc.error.code}): {exc.error.message}"
        content = result.content
        text = content.text if isinstance(content, TextContent) else repr(content)
        dumped = result.model_dump(by_alias=True)  # stop_reason in 2.x, stopReason in 1.x
        return f"{result.model}/{dumped.get('stopReason')}: {text}"

    @mcp.tool(description="Close the response stream mid-call (resumable HTTP only), then answer.")
    async def interrupted(text: str, ctx: Context) -> str:
        await ctx.info("before the break")
        await ctx.close_sse_stream()
        await anyio.sleep(0.3)
        await ctx.info("after the break")
        return f"resumed {text}"

    @mcp.resource("note://greeting", name="greeting", description="A short note.")
    def greeting() -> str:
        return "hello from the server"

    @mcp.prompt(description="Ask for a review of CODE.")
    def review(code: str) -> str:
        return f"Please review: {code}"

    for i in range(int(os.environ.get("AGCORE_TEST_EXTRA_TOOLS", "0"))):
        mcp.add_tool(lambda i=i: i, name=f"extra_{i}", description=f"extra tool {i}")
    return mcp


def memory_event_store() -> Any:
    """An event store kept in memory (2.x): what makes the server's streams resumable."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class MemoryEventStore(EventStore):
        def __init__(self) -> None:
            self.events: list[tuple[str, str, Any]] = []

        async def store_event(self, stream_id: str, message: Any) -> str:
            event_id = str(len(self.events) + 1)
            self.events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(self, last_event_id: str, send_callback: Any) -> Any:
            ids = [event[0] for event in self.events]
            if last_event_id not in ids:
                return None
            at = ids.index(last_event_id)
            stream = self.events[at][1]
            for event_id, stream_id, message in self.events[at + 1 :]:
                if stream_id == stream and message is not None:
                    await send_callback(EventMessage(message, event_id))
            return stream

    return MemoryEventStore()


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        build().run("stdio")
    else:
        port = int(sys.argv[2])
        mcp = build(port=port)
        if SDK == 2 and mode == "http-resumable":
            mcp.run(
                "streamable-http",
                host="127.0.0.1",
                port=port,
                event_store=memory_event_store(),
                retry_interval=200,
            )
        elif SDK == 2 and mode == "sse":  # the legacy HTTP+SSE transport, at /sse
            mcp.run("sse", host="127.0.0.1", port=port)
        elif SDK == 2:
            mcp.run("streamable-http", host="127.0.0.1", port=port)
        elif mode == "sse":
            mcp.run("sse")
        else:
            mcp.run("streamable-http")


if __name__ == "__main__":
    main()
