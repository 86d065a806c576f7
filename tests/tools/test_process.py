"""Tools run child processes through ``run_process`` / ``run_process_sync``: each in a
process group of its own, killed as a whole when the call is cancelled or times out, so
no process of the group outlives the call; and a sync tool stuck in such a child gives
its worker thread back once cancelled.

These tests start real processes (``sh``, ``sleep``, a Python child that starts a
grandchild) and look them up in ``/proc``.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    CancelBatch,
    ExecuteTools,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolRegistry,
    ToolStatus,
    ToolThreads,
    function_tool,
    run_process,
    run_process_sync,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

#: A Python child that starts a grandchild, writes both pids to argv[1], and sleeps.
PARENT = (
    "import subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "tmp = sys.argv[1] + '.tmp'\n"
    "open(tmp, 'w').write(f'{__import__(\"os\").getpid()} {g.pid}')\n"
    "__import__('os').replace(tmp, sys.argv[1])\n"
    "time.sleep(600)\n"
)


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name (state first), None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def group_alive(pgid: int) -> list[int]:
    """Pids of the living (not zombie) processes of process group ``pgid``."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                alive.append(int(entry.name))
    return alive


async def until_gone(pgid: int) -> list[int]:
    """Wait (up to 5 s of real time: the kernel ends killed processes on its own
    schedule) for group ``pgid`` to end; the pids still alive."""
    with trio.move_on_after(5):
        while group_alive(pgid):  # noqa: ASYNC110 (processes end in the OS)
            await trio.sleep(0.02)
    return group_alive(pgid)


def read_pids(path: Path) -> tuple[int, int] | None:
    """The leader's and the grandchild's pids, once the child has written them."""
    if not path.exists():
        return None
    leader, grandchild = map(int, path.read_text().split())
    return leader, grandchild


async def pids_in(path: Path) -> tuple[int, int]:
    with trio.fail_after(30):
        while (pids := read_pids(path)) is None:  # noqa: ASYNC110 (a child writes it)
            await trio.sleep(0.01)
    return pids


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize("how", ["asker", "cancel_batch"])
@pytest.mark.parametrize("alone", [True, False], ids=["alone", "in_a_batch"])
async def test_a_cancelled_call_leaves_no_process_of_its_group(
    system: ActorSystem, tmp_path: Path, sync: bool, how: str, alone: bool
) -> None:
    pidfile = tmp_path / "pids"
    command = [sys.executable, "-c", PARENT, str(pidfile)]

    @function_tool(name="spawn_async")
    async def spawn_async() -> str:
        await run_process(command)
        return "finished"

    @function_tool(name="spawn_sync")
    def spawn_sync() -> str:
        run_process_sync(command)
        return "finished"

    threads = ToolThreads()
    ref = await system.spawn(
        lambda: ToolExecutor(ToolRegistry([spawn_async, spawn_sync]), threads=threads),
        name="tools",
    )
    name = "spawn_sync" if sync else "spawn_async"
    calls = [ToolCall(id="a", name=name)] + ([] if alone else [ToolCall(id="b", name="nothing")])
    async with trio.open_nursery() as nursery:

        async def ask() -> None:
            reply = await ref.ask(ExecuteTools(batch_id="b1", calls=calls))
            assert reply.results[0].status is ToolStatus.CANCELLED

        nursery.start_soon(ask)
        leader, grandchild = await pids_in(pidfile)
        assert group_alive(leader) == sorted([leader, grandchild])
        if how == "asker":
            nursery.cancel_scope.cancel()
        else:
            await ref.tell(CancelBatch("b1"))
    assert await until_gone(leader) == []
    with trio.fail_after(5):
        while threads.busy:  # noqa: ASYNC110 (the thread ends in the OS)
            await trio.sleep(0.01)
    assert threads.abandoned == 0


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_a_timed_out_call_leaves_no_process_of_its_group(
    system: ActorSystem, tmp_path: Path, sync: bool
) -> None:
    pidfile = tmp_path / "pids"
    # sh starts at once: the grandchild exists long before the timeout.
    command = ["sh", "-c", f'sleep 600 & echo "$$ $!" > {pidfile}; wait']

    @function_tool(name="spawn_async", timeout=1.0)
    async def spawn_async() -> str:
        await run_process(command)
        return "finished"

    @function_tool(name="spawn_sync", timeout=1.0)
    def spawn_sync(ctx: ToolContext) -> str:
        run_process_sync(command, ctx=ctx)
        return "finished"

    threads = ToolThreads()
    ref = await system.spawn(
        lambda: ToolExecutor(ToolRegistry([spawn_async, spawn_sync]), threads=threads),
        name="tools",
    )
    name = "spawn_sync" if sync else "spawn_async"
    (result,) = (
        await ref.ask(ExecuteTools(batch_id="b", calls=[ToolCall(id="a", name=name)]))
    ).results
    assert result.status is ToolStatus.TIMEOUT
    leader, _ = await pids_in(pidfile)
    assert await until_gone(leader) == []


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_its_own_timeout_kills_the_group_and_raises_timeout_expired(
    tmp_path: Path, sync: bool
) -> None:
    pidfile = tmp_path / "pids"
    command = ["sh", "-c", f'sleep 600 & echo "$$ $!" > {pidfile}; echo out; wait']
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        if sync:
            await trio.to_thread.run_sync(lambda: run_process_sync(command, timeout=0.5))
        else:
            await run_process(command, timeout=0.5)
    assert caught.value.timeout == 0.5
    leader, _ = await pids_in(pidfile)
    assert await until_gone(leader) == []


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_a_finished_call_returns_its_output_and_leaves_no_straggler(
    tmp_path: Path, sync: bool
) -> None:
    pidfile = tmp_path / "pids"
    # The leader exits at once; its background child, output elsewhere, would run on.
    command = [
        "sh",
        "-c",
        f'sleep 600 >/dev/null 2>&1 & echo "$$ $!" > {pidfile}; cat; echo err >&2; exit 3',
    ]
    if sync:
        done = await trio.to_thread.run_sync(lambda: run_process_sync(command, input=b"hi"))
    else:
        done = await run_process(command, input=b"hi")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"hi", b"err\n")
    leader, _ = await pids_in(pidfile)
    assert await until_gone(leader) == []
    with pytest.raises(subprocess.CalledProcessError):
        if sync:
            await trio.to_thread.run_sync(lambda: run_process_sync(["false"], check=True))
        else:
            await run_process(["false"], check=True)


async def test_a_child_never_reads_the_servers_stdin() -> None:
    """``serve --stdio`` reads its protocol from stdin: a tool's child gets /dev/null."""
    done = await run_process(["sh", "-c", "cat; echo done"])
    assert done.stdout == b"done\n"


async def test_sync_tools_stuck_in_children_give_their_threads_back_once_cancelled(
    system: ActorSystem,
) -> None:
    """One session's stuck sync tools do not make every sync tool refuse for good: once
    cancelled, their children are killed, their threads return, and the budget of
    abandoned threads is whole again."""

    @function_tool(timeout=0.3)
    def stuck() -> str:
        run_process_sync(["sleep", "600"])
        return "late"

    @function_tool
    def quick() -> str:
        return "quick"

    threads = ToolThreads(max_threads=8, max_abandoned=2)
    ref = await system.spawn(
        lambda: ToolExecutor(ToolRegistry([stuck, quick]), threads=threads), name="tools"
    )
    stuck_calls = [ToolCall(id=f"c{i}", name="stuck") for i in range(5)]
    reply = await ref.ask(ExecuteTools(batch_id="s1", session_id="one", calls=stuck_calls))
    assert {r.status for r in reply.results} == {ToolStatus.TIMEOUT}
    with trio.fail_after(5):
        while threads.busy or threads.abandoned:  # noqa: ASYNC110 (threads end in the OS)
            await trio.sleep(0.01)
    quick_call = [ToolCall(id="q", name="quick")]
    (again,) = (
        await ref.ask(ExecuteTools(batch_id="s2", session_id="two", calls=quick_call))
    ).results
    assert again.content == "quick"


def test_outside_a_tool_it_runs_to_completion_without_a_context() -> None:
    done = run_process_sync([sys.executable, "-c", "print(6 * 7)"])
    assert done.stdout.strip() == b"42"


async def test_a_missing_program_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await run_process([str(tmp_path / "no-such-program")])
    with pytest.raises(FileNotFoundError):
        run_process_sync([str(tmp_path / "no-such-program")])


@pytest.mark.parametrize("command", [[], "sleep 1", b"sleep"], ids=["empty", "str", "bytes"])
async def test_a_command_that_is_not_a_list_of_words_is_refused(command: object) -> None:
    with pytest.raises(ValueError, match="non-empty list"):
        await run_process(command)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty list"):
        run_process_sync(command)  # type: ignore[arg-type]


def marked_alive(marker: str) -> list[int]:
    """Pids of living processes whose command line holds ``marker``."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        fields = stat_fields(int(entry.name))
        if marker.encode() in cmdline and fields is not None and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


async def until_unmarked(marker: str) -> list[int]:
    with trio.move_on_after(5):
        while marked_alive(marker):  # noqa: ASYNC110 (processes end in the OS)
            await trio.sleep(0.02)
    return marked_alive(marker)


def marked_command(marker: str) -> list[str]:
    """A Python child and grandchild, both with ``marker`` in their command lines."""
    grandchild = f"import time; time.sleep(600)  # {marker}"
    child = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
        "time.sleep(600)\n"
    )
    return [sys.executable, "-c", child, marker]


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_cancelled_after_any_number_of_checkpoints_it_leaves_no_process(
    tmp_path: Path, sync: bool
) -> None:
    """Cancelled after k scheduler checkpoints of the caller (k = 0 .. 11), or at a few
    real moments of the child's start: no process the call started is left."""
    steps = [("checkpoints", k) for k in range(12)] + [
        ("seconds", s) for s in (0.001, 0.01, 0.05, 0.2)
    ]
    threads = ToolThreads()
    for n, (unit, amount) in enumerate(steps):
        marker = f"agcore-test-{tmp_path.name}-{n}"
        command = marked_command(marker)
        ctx = ToolContext()

        async def call(command: list[str] = command, ctx: ToolContext = ctx) -> None:
            if sync:
                await threads.run_sync("t", functools.partial(run_process_sync, command, ctx=ctx))
            else:
                await run_process(command)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            if unit == "checkpoints":
                for _ in range(int(amount)):
                    await trio.lowlevel.checkpoint()
            else:
                await trio.sleep(amount)
            nursery.cancel_scope.cancel()
        if sync:
            ctx.cancel_token.cancel()  # what the executor does for a cancelled sync call
            with trio.fail_after(5):
                while threads.busy:  # noqa: ASYNC110 (the thread ends in the OS)
                    await trio.sleep(0.01)
        assert await until_unmarked(marker) == [], (unit, amount)
