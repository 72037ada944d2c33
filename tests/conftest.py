"""Test-wide settings. Nothing here keeps Ray on loopback: rafka does that itself, as for users."""

import os

import pytest

from rafka.cli.certs import CertFiles, make_certs

os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    """A development CA, a broker keystore for localhost and 127.0.0.1, and a client keystore,
    made as `rafka certs --client` makes them."""
    return make_certs(tmp_path_factory.mktemp("certs"), ["localhost", "127.0.0.1"], 1, client=True)


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    """A second CA and its certificates, made elsewhere: no broker trusts any of it."""
    return make_certs(tmp_path_factory.mktemp("stranger"), ["localhost"], 1, client=True)
