#!/usr/bin/env bash
# Install the given Debian packages, but only those that are missing.
#
#   scripts/apt-ensure.sh python3-venv chromium docker-compose ...
#
# Fast when everything is present (one dpkg-query per package, no network);
# runs `apt-get update` only when something has to be installed. Uses sudo
# when not root. On a system without apt-get it lists what is missing and
# exits 0, so the steps after it fail with their own, clearer errors.
set -euo pipefail

[ "$#" -gt 0 ] || exit 0

missing=()
for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-ensure: no apt-get here; please install: ${missing[*]}" >&2
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "apt-ensure: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi

echo "apt-ensure: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# --no-install-recommends: docker-compose would otherwise pull in a whole Docker engine.
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
