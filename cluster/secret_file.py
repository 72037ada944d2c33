"""Secrets a cluster keeps in its data directory (the Ray token, the ZooKeeper identity): files of
mode 0600, created with that mode before a byte of the secret is written, and refused when others
than their owner may read them (the secret may have leaked) or when they are empty."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SECRET_MODE = 0o600


class SecretFileError(PermissionError):
    """A secret file others than its owner may read, or an empty one."""


def create_secret(path: Path, secret: str) -> bool:
    """Write ``secret`` to a new file at ``path`` of mode 0600; False, writing nothing, when the
    file exists already (another start made it first, or the cluster is restarting)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_MODE)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w") as file:
        file.write(secret)
    return True


def read_secret(path: Path) -> str | None:
    """The secret in ``path`` (stripped), None if there is no such file; SecretFileError saying
    what to do if others may read it or it is empty."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretFileError(
            f"{path} can be read by others (mode {mode:o}): the secret in it may have leaked; "
            f"remove the file to have a new one made, or `chmod 600 {path}` to keep it"
        )
    secret = path.read_text().strip()
    if not secret:
        raise SecretFileError(f"{path} is empty: remove it to have a new one made")
    return secret
