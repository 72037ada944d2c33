"""The Ray authentication token of a cluster that ``rafka up --secure`` or
``LocalCluster(secure=True)`` starts, and how a process that joins it finds the token.

With ``RAY_AUTH_MODE=token`` every Ray RPC (and the dashboard) must carry a shared token; Ray reads
it from ``RAY_AUTH_TOKEN``, else from the file ``RAY_AUTH_TOKEN_PATH`` names, else from
``~/.ray/auth_token``. rafka keeps the token in ``<data_dir>/ray-auth-token``, created with mode
0600 before a byte of it is written, rather than at Ray's default path: ``ray get-auth-token
--generate`` writes that one world-readable, one file there would serve every Ray instance of the
user (and its mere presence switches on token mode for Ray's "auto" connections), and a token in
the data directory lives and dies with the cluster it protects. The state file records only the
token file's path. Ray's raylet hands its environment to the worker processes it starts, so
brokers and replicas get the token from the head's ``RAY_AUTH_TOKEN_PATH``; a joining process gets
it from ``use`` (``rafka`` commands and ``cluster_address``) or from its own environment.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

from rafka.cluster.secret_file import create_secret, read_secret

TOKEN_FILE = "ray-auth-token"
MODE_VARIABLE = "RAY_AUTH_MODE"
PATH_VARIABLE = "RAY_AUTH_TOKEN_PATH"
TOKEN_VARIABLE = "RAY_AUTH_TOKEN"


def create(data_dir: Path) -> Path:
    """The token file of ``data_dir``: a new random token (256 bits, as Ray's own generator makes)
    in a file of mode 0600, or the one already there, so a restarted cluster keeps its token and
    the processes configured with it. A file others may read, or an empty one, is refused
    (``SecretFileError``), not used."""
    path = data_dir / TOKEN_FILE
    create_secret(path, secrets.token_hex(32))
    read_secret(path)
    return path


def environment(base: Mapping[str, str], token_file: str | os.PathLike[str]) -> dict[str, str]:
    """``base`` as a process that joins the cluster of ``token_file`` needs it: token mode on and
    the token read from that file. A ``RAY_AUTH_TOKEN`` in ``base`` is left out, as Ray would
    prefer it to the file (it may be another cluster's)."""
    kept = {name: value for name, value in base.items() if name != TOKEN_VARIABLE}
    return {**kept, MODE_VARIABLE: "token", PATH_VARIABLE: str(token_file)}


def use(token_file: str | os.PathLike[str] | None) -> None:
    """Point this process's coming Ray connection at ``token_file`` (nothing when None, or when the
    process is already connected: a connection keeps the credentials it was made with)."""
    if token_file is None:
        return
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return
    wanted = environment(os.environ, token_file)
    os.environ.pop(TOKEN_VARIABLE, None)
    os.environ.update(wanted)
    # Ray reads RAY_AUTH_MODE into its config, and the token into a cache, when it is imported and
    # first used; Ray itself re-reads both the same way when it switches a process to token mode.
    raylet = sys.modules.get("ray._raylet")
    if raylet is not None:
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()
