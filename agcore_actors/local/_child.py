"""The local model server's own process: llama.cpp's OpenAI-compatible server (xllamacpp).

Run by :class:`~agcore_actors.local.LocalModelServer` with a Python that has xllamacpp,
as a script (standard library plus xllamacpp, no import of this package), in a process
group of its own::

    python _child.py '{"model": PATH, "port": 0, ...}'

Protocol with the parent:

- once the model is loaded and the HTTP server listens, one JSON line on stdout:
  ``{"url": "http://127.0.0.1:PORT"}``;
- exit code 3 when xllamacpp cannot be imported, 4 when the server cannot start (the
  reason is on stderr), 2 for bad arguments;
- it serves until its stdin reaches end of file (the parent closed it, or the parent
  died) or it is signalled, then exits: a server never outlives its parent's pipe.

A preferred port that is taken is replaced by a free one (the parent learns the URL
from the first line), so a restart keeps its URL whenever it can.
"""

from __future__ import annotations

import importlib
import json
import socket
import sys
from typing import Any

EXIT_USAGE = 2
EXIT_NO_RUNTIME = 3
EXIT_START_FAILED = 4


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _params(xllamacpp: Any, options: dict[str, Any]) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = options["model"]
    params.model_alias = {options["alias"]}
    params.n_ctx = int(options["n_ctx"])
    params.n_parallel = int(options.get("parallel", 1))
    params.cpuparams.n_threads = int(options["threads"])
    params.cpuparams_batch.n_threads = int(options["threads"])
    params.n_gpu_layers = 0
    params.hostnames = [options["host"]]
    port = int(options.get("port", 0))
    params.port = port if port and _port_is_free(options["host"], port) else 0
    params.ui = False
    params.use_jinja = True
    params.verbosity = int(options.get("verbosity", 2))  # 2: warnings and errors only
    if options.get("chat_template"):
        params.chat_template = options["chat_template"]
    if options.get("api_key"):
        params.api_keys = [options["api_key"]]
    if options.get("slot_save_path"):  # enables POST /slots/{id}?action=save|restore
        params.slot_save_path = str(options["slot_save_path"])
    return params


def main(argv: list[str]) -> int:
    try:
        (raw,) = argv
        options = json.loads(raw)
        assert isinstance(options, dict)
    except (ValueError, AssertionError):
        print("usage: _child.py '<options as a JSON object>'", file=sys.stderr)
        return EXIT_USAGE
    try:
        xllamacpp = importlib.import_module("xllamacpp")
    except ImportError as exc:
        print(f"xllamacpp is not importable by {sys.executable}: {exc}", file=sys.stderr)
        return EXIT_NO_RUNTIME
    try:
        server = xllamacpp.Server(_params(xllamacpp, options))
    except Exception as exc:
        print(f"the llama.cpp server did not start: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    print(json.dumps({"url": server.listening_address}), flush=True)
    # Serve (on xllamacpp's own threads) until the parent closes our stdin or dies.
    while sys.stdin.buffer.read(65536):
        pass
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
