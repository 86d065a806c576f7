#!/usr/bin/env bash
# Real MCP peers for tests/mcp and tests/test_mcp_*.py, each in its own virtualenv:
#   .peers/mcp2  the official SDK, 2.x line (mcp.server.mcpserver.MCPServer)
#   .peers/mcp1  the official SDK, last 1.x (mcp.server.fastmcp.FastMCP)
#   .peers/mcp-time  the third-party server mcp-server-time (PyPI)
# Idempotent: a venv whose stamp names the wanted version is left alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
python="${PYTHON:-python3}"

install() {  # install <dir> <requirement>
    local dir=".peers/$1" want="$2"
    if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
        return 0
    fi
    rm -rf "$dir"
    mkdir -p .peers
    "$python" -m venv "$dir" \
        || { echo "install_mcp.sh: cannot create virtualenv $dir" >&2; exit 1; }
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$want" \
        || { echo "install_mcp.sh: pip could not install $want into $dir" >&2; exit 1; }
    echo "$want" >"$dir/.installed"
}

install mcp2 "mcp==2.3.0"
install mcp1 "mcp==1.30.0"
install mcp-time "mcp-server-time==2026.10.19"
