"""SQLite files only their owner may read: users and tokens (auth.sqlite), alert rules with their
webhook URLs and signing secrets (alerts.sqlite)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def open_private(path: Path, schema: str, *pragmas: str) -> sqlite3.Connection:
    """A connection to `path` in WAL mode, shared across threads (the caller locks), created and kept
    mode 0600 with its WAL and index, the schema applied."""
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    path.chmod(0o600)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for p in pragmas:
        db.execute(f"PRAGMA {p}")
    db.executescript(schema)
    for side in path.parent.glob(path.name + "-*"):  # the WAL and its index hold the same rows
        side.chmod(0o600)
    return db
