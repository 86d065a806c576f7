"""The processes of the cluster benchmark and chaos test (benchmarks/cluster.py).

- :class:`Database`: a fresh PostgreSQL database per run, dropped at the end;
- :class:`FakeModel`: benchmarks/fake_openai.py, the zero-latency model, its own process;
- :class:`HostProcess`: one ``agcore-actors serve --http`` process, with the signals the
  faults send it (SIGKILL, SIGSTOP/SIGCONT, restart under a new host id) and its CPU time
  read from ``/proc``;
- :class:`Netns`: a network namespace joined to this one by a veth pair, for the host
  that is cut off from PostgreSQL and the other hosts (link down plus a blackhole route:
  packets are dropped, nothing answers) and later rejoined;
- :func:`relay`: a TCP relay from the veth's address to PostgreSQL, which listens on
  loopback only (the relay is a byte pump: a cut leaves its sockets open and silent,
  as a real network would); :class:`RelayProcess` runs it in a process of its own
  (in the benchmark's process, busy with 200 clients, it delayed every round trip of
  the namespace's host to PostgreSQL by seconds under load: that host then failed
  its store requests, which no real network does).

Everything here is the harness's own: nothing of agcore_actors is imported, so what it
measures and checks does not share code with what it tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import trio

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "benchmarks" / "fake_openai.py"
TICKS = os.sysconf("SC_CLK_TCK")
#: The admin URL of the PostgreSQL server (its ``test`` database).
DEFAULT_ADMIN_URL = os.environ.get(
    "AGCORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0.0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def postgres_cpu_seconds() -> float:
    """CPU seconds of every ``postgres`` process on the machine (the server's cost; other
    users of the server count too, so runs compare only on a quiet server)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "postgres":
                total += cpu_seconds(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


class Database:
    """A fresh database on the server of ``admin_url``, dropped by :meth:`drop`."""

    def __init__(self, admin_url: str = DEFAULT_ADMIN_URL, prefix: str = "agcore_chaos") -> None:
        import psycopg

        self.admin_url = admin_url
        self.name = f"{prefix}_{os.getpid()}_{int(time.time() * 1000) % 10**9}"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = _with_database(admin_url, self.name)

    def url_for(self, application: str, host: str | None = None) -> str:
        """The database's URL for one client, named ``application`` in PostgreSQL (the
        checker's triggers record it as the writer); ``host`` replaces 127.0.0.1:5432."""
        url = self.url
        if host is not None:
            scheme, rest = url.split("://", 1)
            user, _, tail = rest.rpartition("@")
            url = f"{scheme}://{user + '@' if user else ''}{host}/{tail.split('/', 1)[1]}"
        return f"{url}?application_name={application}"

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class FakeModel:
    """benchmarks/fake_openai.py in its own process, listening on ``hosts``."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        port = 0
        if len(hosts) > 1:  # one port for every address: pick a free one first
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        argv = [sys.executable, str(FAKE), "--host", ",".join(hosts), "--port", str(port)]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the fake model did not start: {line!r}")
        self.port = int(line.split()[1])

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/v1"

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@attrs.define(kw_only=True)
class HostProcess:
    """One ``serve --http`` host; ``index`` names it (``h<index>``, then ``h<index>r<n>``
    after the n-th restart: a restarted process is a new host, as with the default ids)."""

    index: int
    #: Where it listens and where the others reach it.
    bind: str
    port: int
    advertise: str
    store_url: Any  # str, or a function of the host id that returns one
    model_url: str
    token: str
    workdir: Path
    cluster: dict[str, float]
    netns: str | None = None
    restarts: int = 0
    process: subprocess.Popen[bytes] | None = None
    #: CPU seconds of the processes this host had before its current one.
    cpu_before: float = 0.0

    @property
    def host_id(self) -> str:
        return f"h{self.index}" + (f"r{self.restarts}" if self.restarts else "")

    @property
    def url(self) -> str:
        """Where clients reach it (its advertised address)."""
        return self.advertise

    def config_text(self) -> str:
        if not self.cluster:  # one host, no cluster
            return ""
        lines = ["[cluster]", f'host_id = "{self.host_id}"', f'address = "{self.advertise}"']
        lines += [f"{key} = {value}" for key, value in self.cluster.items()]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        """Start the process (it must not be running: a second one would be orphaned)."""
        if self.alive:
            raise RuntimeError(f"host {self.host_id} is running already")
        config = self.workdir / f"{self.host_id}.toml"
        config.write_text(self.config_text())
        store = self.store_url(self.host_id) if callable(self.store_url) else self.store_url
        argv = [sys.executable, "-m", "agcore_actors.cli", "serve",
                "--http", f"{self.bind}:{self.port}", "--store", store,
                "--config", str(config)]  # fmt: skip
        if self.netns is not None:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": self.model_url,
               "OPENAI_MODEL": "fake", "OPENAI_API_KEY": "sk-fake",
               "AGCORE_SERVE_TOKEN": self.token,
               "PYTHONUNBUFFERED": "1"}  # a SIGKILLed host's log lines are all there  # fmt: skip
        log = (self.workdir / f"{self.host_id}.log").open("wb")
        self.process = subprocess.Popen(argv, stdout=log, stderr=log, env=env, cwd=self.workdir)
        log.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def cpu(self) -> float:
        """CPU seconds of all this host's processes so far."""
        now = cpu_seconds(self.process.pid) if self.alive and self.process else 0.0
        return self.cpu_before + now

    def signal(self, signum: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        if self.process is None:
            return
        self.cpu_before += cpu_seconds(self.process.pid)
        self.signal(signal.SIGKILL)
        self.process.wait()

    def renew_id(self) -> None:
        """The next start is under a new host id (kill it first)."""
        self.restarts += 1

    def terminate(self, timeout: float = 10.0) -> None:
        """SIGCONT then SIGTERM; SIGKILL after ``timeout`` seconds."""
        if not self.alive or self.process is None:
            return
        self.cpu_before += cpu_seconds(self.process.pid)
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 20) -> str:
        path = self.workdir / f"{self.host_id}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *args] if netns is None else ["ip", "netns", "exec", netns, "ip", *args]
    subprocess.run(argv, check=True, capture_output=True)


def netns_works() -> bool:
    """Whether this machine lets us make a namespace with a veth pair (root, iproute2)."""
    name = f"agcchk{os.getpid() % 100000}"
    try:
        _ip("netns", "add", name)
    except (OSError, subprocess.CalledProcessError):
        return False
    try:
        _ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
        _ip("link", "del", f"{name}a")
        return True
    except subprocess.CalledProcessError:
        return False
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


class Netns:
    """A namespace ``name`` joined by a veth pair: ``outer`` (here) and ``inner`` (there)."""

    def __init__(self, name: str, subnet: int) -> None:
        self.name = name
        self.outer = f"10.{200 + subnet % 50}.{os.getpid() % 250}.1"
        self.inner = self.outer.rsplit(".", 1)[0] + ".2"
        self.link = f"{name[:10]}o"
        _ip("netns", "add", name)
        try:
            _ip("link", "add", self.link, "type", "veth", "peer", "name", f"{name[:10]}i")
            _ip("link", "set", f"{name[:10]}i", "netns", name)
            _ip("addr", "add", f"{self.outer}/30", "dev", self.link)
            _ip("link", "set", self.link, "up")
            _ip("addr", "add", f"{self.inner}/30", "dev", f"{name[:10]}i", netns=name)
            _ip("link", "set", f"{name[:10]}i", "up", netns=name)
            _ip("link", "set", "lo", "up", netns=name)
        except subprocess.CalledProcessError:
            self.close()
            raise
        self.is_cut = False

    def cut(self) -> None:
        """Drop every packet between the namespace and here, both ways, silently for the
        namespace (its link loses carrier) and at once for senders here (blackhole)."""
        _ip("link", "set", self.link, "down")
        _ip("route", "add", "blackhole", f"{self.inner}/32")
        self.is_cut = True

    def heal(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("route", "del", "blackhole", f"{self.inner}/32")
        _ip("link", "set", self.link, "up")
        self.is_cut = False

    def close(self) -> None:
        subprocess.run(["ip", "route", "del", "blackhole", f"{self.inner}/32"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.link], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


async def relay(
    listen: tuple[str, int],
    target: tuple[str, int],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Relay TCP connections from ``listen`` to ``target`` until cancelled."""

    async def pump(src: trio.SocketStream, dst: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while data := await src.receive_some(65536):
                await dst.send_all(data)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await dst.send_eof()

    async def handle(client: trio.SocketStream) -> None:
        try:
            server = await trio.open_tcp_stream(*target)
        except OSError:
            await client.aclose()
            return
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(pump, client, server)
            nursery.start_soon(pump, server, client)

    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])
    task_status.started()
    await trio.serve_listeners(handle, listeners)


class RelayProcess:
    """:func:`relay` in a process of its own (``python cluster_rig.py relay ...``)."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        argv = [sys.executable, __file__, "relay", listen[0], str(listen[1]),
                target[0], str(target[1])]  # fmt: skip
        self.listen = listen
        self.process = subprocess.Popen(argv)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the relay accepts connections (raises if it exits or never does)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(self.listen, 0.5):
                return
            time.sleep(0.05)
        raise RuntimeError(f"the relay on {self.listen} did not start")

    def terminate(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def cleanup() -> Iterator[list[Any]]:
    """A list of things with ``close()``/``terminate()``/``drop()``, undone in reverse."""
    things: list[Any] = []
    try:
        yield things
    finally:
        for thing in reversed(things):
            for method in ("terminate", "close", "drop"):
                if hasattr(thing, method):
                    with contextlib.suppress(Exception):
                        getattr(thing, method)()
                    break


if __name__ == "__main__" and sys.argv[1:2] == ["relay"]:
    _, _, listen_host, listen_port, target_host, target_port = sys.argv
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(relay, (listen_host, int(listen_port)), (target_host, int(target_port)))
