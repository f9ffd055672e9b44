#!/bin/sh
# Image entrypoint: runs `loupe "$@"`.
# If LOUPE_INGEST_TOKEN is empty and LOUPE_INGEST_TOKEN_FILE names a readable file
# (e.g. the server's /var/lib/loupe/ingest.token on a shared volume), the token is
# read from it, so an agent next to the server needs no token configured by hand.
set -eu
if [ -z "${LOUPE_INGEST_TOKEN:-}" ] && [ -n "${LOUPE_INGEST_TOKEN_FILE:-}" ]; then
    if [ -r "$LOUPE_INGEST_TOKEN_FILE" ]; then
        LOUPE_INGEST_TOKEN=$(tr -d '[:space:]' < "$LOUPE_INGEST_TOKEN_FILE")
        export LOUPE_INGEST_TOKEN
    else
        echo "docker-entrypoint: LOUPE_INGEST_TOKEN_FILE=$LOUPE_INGEST_TOKEN_FILE is not readable" >&2
        exit 1
    fi
fi
# An empty LOUPE_INGEST_TOKEN means "not set" (the server then keeps its own in the data dir).
[ -n "${LOUPE_INGEST_TOKEN:-}" ] || unset LOUPE_INGEST_TOKEN
exec loupe "$@"
