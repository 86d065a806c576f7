"""The ``embeddings`` extra's model wrapper (``memory/_embeddings.py``): it loads from
the files of its wheel with no network and no hub, says which extra to install when the
package is missing, caches vectors by text, and gives the same answers to threads
calling at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agcore_actors.memory.embeddings import EXTRA_HINT, Embedder, WordLlamaEmbedder

ROOT = Path(__file__).resolve().parents[2]

# Run in a child Python: every way out to the network raises before the embedder is
# built, and HOME is empty (no ~/.cache/wordllama to fall back on).
NO_NETWORK = """
import socket, sys

def refuse(*args, **kwargs):
    raise OSError("network refused by the test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from agcore_actors.memory.embeddings import WordLlamaEmbedder

e = WordLlamaEmbedder()
near, far = e.similarities(
    "the supervisor restarts a crashed actor",
    ["a crashed child actor is restarted by its supervisor", "banana bread recipe"],
)
assert near > far, (near, far)
print("ok", e.name)
"""


def test_the_embedder_loads_from_its_wheel_with_the_hub_offline_and_no_network(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_"))}
    env.update(HF_HUB_OFFLINE="1", HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok wordllama-")
    assert list(home.iterdir()) == []  # nothing downloaded, nothing cached


def test_without_the_extra_the_embedder_names_it_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as in an install without it
    with pytest.raises(ModuleNotFoundError) as caught:
        WordLlamaEmbedder()
    assert str(caught.value) == EXTRA_HINT
    assert str(caught.value) == (
        "local embeddings need wordllama: pip install 'agcore-actors[embeddings]'"
    )
    assert caught.value.name == "wordllama"


def test_similarity_ranks_a_related_text_above_an_unrelated_one(
    embedder: WordLlamaEmbedder,
) -> None:
    assert isinstance(embedder, Embedder)
    sims = embedder.similarities(
        "restart an actor that crashed",
        ["a supervisor restarts its crashed children", "banana bread recipe", ""],
    )
    assert sims[0] > sims[1]
    assert sims[2] == 0.0  # a text of no token has no direction
    assert all(-1.0 <= s <= 1.0 for s in sims)
    assert embedder.similarities("anything", []) == []


def test_the_cache_is_keyed_by_text_so_an_edited_page_is_embedded_again() -> None:
    small = WordLlamaEmbedder(cache_size=2)
    first = small.similarities("tea", ["green tea", "black coffee"])
    assert small.similarities("tea", ["green tea", "black coffee"]) == first
    edited = small.similarities("tea", ["green tea", "black tea"])
    assert edited[0] == first[0] and edited[1] > first[1]
    assert len(small._cache) <= 2


def test_threads_asking_at_once_get_the_answers_of_one_asking_alone(
    embedder: WordLlamaEmbedder,
) -> None:
    queries = [f"query {i} about actors and memory" for i in range(8)]
    texts = [f"page {i}: supervisors, retries and memory stores" for i in range(40)]
    alone = {q: WordLlamaEmbedder().similarities(q, texts) for q in queries}
    got: dict[str, list[float]] = {}
    barrier = threading.Barrier(len(queries))

    def ask(q: str) -> None:
        barrier.wait()
        got[q] = embedder.similarities(q, texts)

    threads = [threading.Thread(target=ask, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert got == alone
