#!/usr/bin/env bash
# Installs Debian's Chromium for the observer page's browser test (tests/serve). Idempotent:
# returns at once when /usr/bin/chromium is there.
set -euo pipefail

[ -x /usr/bin/chromium ] && exit 0
fail() { echo "install_chromium.sh: $*" >&2; exit 1; }
command -v apt-get >/dev/null || fail "no apt-get here: install Debian's chromium package by hand"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium >/dev/null 2>&1; } \
    || fail "apt-get could not install chromium"
[ -x /usr/bin/chromium ] || fail "chromium is not at /usr/bin/chromium after the install"
