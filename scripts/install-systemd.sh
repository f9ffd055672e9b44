#!/usr/bin/env bash
# Install Loupe on this host as systemd services (Debian 12, as root):
#
#   scripts/install-systemd.sh            # then: systemctl enable --now loupe
#
# - builds the UI if backend/loupe/static is missing (make ui),
# - installs the package into a venv at $LOUPE_PREFIX/venv (default /opt/loupe),
# - installs deploy/loupe.service and deploy/loupe-agent.service,
# - creates /etc/loupe/loupe.env and /etc/loupe/agent.env (0600) if absent.
#
# It enables nothing by itself. Re-running it upgrades the package in place.
# LOUPE_PREFIX, SYSTEMD_DIR and LOUPE_CONF_DIR change where things go (for testing).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${LOUPE_PREFIX:-/opt/loupe}
unit_dir=${SYSTEMD_DIR:-/etc/systemd/system}
conf_dir=${LOUPE_CONF_DIR:-/etc/loupe}

if [ "$(id -u)" -ne 0 ] && [ -z "${LOUPE_PREFIX:-}" ]; then
    echo "install-systemd: run as root" >&2
    exit 1
fi

bash "$repo/scripts/apt-ensure.sh" python3-venv

if [ ! -f "$repo/backend/loupe/static/index.html" ]; then
    if [ -f "$repo/frontend/package.json" ]; then
        make -C "$repo" ui
    else
        echo "install-systemd: WARNING: no frontend/ yet; installing without the UI" >&2
    fi
fi

echo "install-systemd: installing the package into $prefix/venv"
mkdir -p "$prefix"
[ -x "$prefix/venv/bin/python" ] || python3 -m venv "$prefix/venv"
"$prefix/venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade "$repo"

mkdir -p "$unit_dir"
for unit in loupe.service loupe-agent.service; do
    sed "s#/opt/loupe/venv/bin/loupe#$prefix/venv/bin/loupe#" "$repo/deploy/$unit" > "$unit_dir/$unit"
    chmod 0644 "$unit_dir/$unit"
done

mkdir -p "$conf_dir"
umask 077
if [ ! -f "$conf_dir/loupe.env" ]; then
    cat > "$conf_dir/loupe.env" <<'EOF'
# Environment of loupe.service (see README: Configuration).
# LOUPE_HOST=127.0.0.1
# LOUPE_PORT=8470
# LOUPE_DATA_DIR=/var/lib/loupe
# Token agents must send; if unset the server generates /var/lib/loupe/ingest.token.
# LOUPE_INGEST_TOKEN=
EOF
fi
if [ ! -f "$conf_dir/agent.env" ]; then
    cat > "$conf_dir/agent.env" <<'EOF'
# Environment of loupe-agent.service.
LOUPE_SERVER=http://127.0.0.1:8470
# The server's token (on the server host: cat /var/lib/loupe/ingest.token).
LOUPE_INGEST_TOKEN=
EOF
fi

if [ -d /run/systemd/system ] && [ "$unit_dir" = /etc/systemd/system ]; then
    systemctl daemon-reload
fi
echo "install-systemd: done. Start the server:  systemctl enable --now loupe"
echo "                 an agent (remote server): edit $conf_dir/agent.env, then systemctl enable --now loupe-agent"
