"""Start the real llama-cpp-python server (installed by tests/peers/install_llama.sh)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".peers" / "llama" / "bin" / "python"
MODEL = ROOT / ".peers" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def llama_server(*extra: str) -> Iterator[str]:
    """Run the server on a free port; yields its ``.../v1`` base URL."""
    if not PYTHON.exists() or not MODEL.exists():
        raise RuntimeError(
            "the llama peer is not installed: run `bash tests/peers/install_llama.sh` "
            "(./dev test does)"
        )
    port = _free_port()
    command = [
        str(PYTHON), "-m", "llama_cpp.server", "--model", str(MODEL),
        "--host", "127.0.0.1", "--port", str(port), "--model_alias", "smollm2",
        "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
        "--interrupt_requests", "false", "--verbose", "false", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"llama server exited with {process.returncode}: {err[-500:]}")
            try:
                with urllib.request.urlopen(base + "/models", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama server did not answer /v1/models within 60 s")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
