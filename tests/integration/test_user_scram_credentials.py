"""Users' SCRAM credentials (KIP-554) on the shared cluster: set, described and deleted through
rafka's Admin, the ``rafka configs`` command, kafka-python's KafkaAdminClient and confluent-kafka's
AdminClient over the PLAINTEXT listener; each lands in ZooKeeper as Kafka keeps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import kafka
import pytest
import ray
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import ScramCredentialInfo as ConfluentCredentialInfo
from confluent_kafka.admin import ScramMechanism as ConfluentMechanism
from confluent_kafka.admin import UserScramCredentialUpsertion as ConfluentUpsertion
from kafka import KafkaAdminClient
from kazoo.client import KazooClient

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.users import (
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import ScramCredential, ScramMechanism

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.usefixtures("cluster"),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
CLUSTER = "it"
"""The shared cluster's name: the ``zk`` fixture looks at its chroot."""
NS = "rafka-test"
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def user_config(zk: KazooClient, user: str) -> dict[str, Any]:
    """The ``/config/users/<user>`` znode, parsed."""
    data, _ = zk.get(f"/config/users/{user}")
    parsed: dict[str, Any] = json.loads(data)
    return parsed


def credential(zk: KazooClient, user: str, mechanism: ScramMechanism) -> ScramCredential:
    """The credential ZooKeeper holds for a user's mechanism."""
    return ScramCredential.from_text(user_config(zk, user)["config"][mechanism.value])


def test_admin_sets_describes_and_deletes_credentials_kept_as_kafka_keeps_them(
    admin: Admin, zk: KazooClient
) -> None:
    user = "native-alice"
    admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion.from_password(user, SHA256, "alice-secret", 8192),
            UserScramCredentialUpsertion.from_password(user, SHA512, "alice-secret"),
        ]
    )
    [described] = admin.describe_user_scram_credentials([user])
    assert described.credential_infos == (
        ScramCredentialInfo(SHA256, 8192),
        ScramCredentialInfo(SHA512, 4096),
    )
    assert user in [d.user for d in admin.describe_user_scram_credentials()]
    znode = user_config(zk, user)
    assert znode["version"] == 1
    assert set(znode["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    text = znode["config"]["SCRAM-SHA-256"]
    assert [part.split("=", 1)[0] for part in text.split(",")] == [
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    ]
    assert text.endswith(",iterations=8192")
    assert "alice-secret" not in json.dumps(znode)
    assert credential(zk, user, SHA256).matches(SHA256, "alice-secret")
    changes = sorted(zk.get_children("/config/changes"))
    assert json.loads(zk.get(f"/config/changes/{changes[-1]}")[0]) == {
        "version": 2,
        "entity_path": f"users/{user}",
    }

    admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, SHA512)])
    assert admin.describe_user_scram_credentials([user])[0].credential_infos == (
        ScramCredentialInfo(SHA256, 8192),
    )
    with pytest.raises(RafkaError) as raised:
        admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, SHA512)])
    assert raised.value.error is Errors.RESOURCE_NOT_FOUND


def test_a_refused_user_leaves_zookeeper_untouched_and_the_others_are_altered(
    admin: Admin, zk: KazooClient
) -> None:
    too_few = UserScramCredentialUpsertion("native-bob", SHA256, 1000, b"salt", b"salted")
    with pytest.raises(RafkaError, match="native-bob") as raised:
        admin.alter_user_scram_credentials(
            [too_few, UserScramCredentialUpsertion.from_password("native-carol", SHA256, "c")]
        )
    assert raised.value.error is Errors.UNACCEPTABLE_CREDENTIAL
    assert zk.exists("/config/users/native-bob") is None
    assert credential(zk, "native-carol", SHA256).matches(SHA256, "c")


def rafka_configs(*args: str) -> subprocess.CompletedProcess[str]:
    """``rafka configs`` in a process of its own, with the user's environment."""
    address = ray.get_runtime_context().gcs_address
    return subprocess.run(
        [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address, "configs", *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_configs_command_manages_users_like_kafka_configs(zk: KazooClient) -> None:
    entity = ("--entity-type", "users", "--entity-name", "cli-alice")
    added = rafka_configs(
        *entity,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Completed updating config for user cli-alice."
    assert credential(zk, "cli-alice", SHA512).matches(SHA512, "alice-secret")
    described = rafka_configs(*entity, "--describe")
    assert described.stdout.splitlines() == [
        "SCRAM credential configs for user-principal 'cli-alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    ]
    deleted = rafka_configs(*entity, "--alter", "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    every = rafka_configs("--entity-type", "users", "--describe")
    assert (
        "SCRAM credential configs for user-principal 'cli-alice' are SCRAM-SHA-256=iterations=8192"
        in every.stdout.splitlines()
    )
    refused = rafka_configs(*entity, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192]")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: --add-config: SCRAM-SHA-256 needs a password: SCRAM-SHA-256=[password=...]"
    )


@pytest.fixture(scope="module")
def kafka_admin(cluster: LocalCluster) -> Iterator[KafkaAdminClient]:
    """A kafka-python admin client of the shared cluster's PLAINTEXT listener."""
    client = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers(), request_timeout_ms=60_000
    )
    yield client
    client.close()


def test_kafka_python_alters_and_describes_users_over_the_wire(
    kafka_admin: KafkaAdminClient, admin: Admin, zk: KazooClient
) -> None:
    mechanism = kafka.admin.ScramMechanism
    assert kafka_admin.alter_user_scram_credentials(
        [
            kafka.admin.UserScramCredentialUpsertion(
                "wire-alice", mechanism.SCRAM_SHA_256, "alice-secret", iterations=8192
            ),
            kafka.admin.UserScramCredentialUpsertion(
                "wire-bob", mechanism.SCRAM_SHA_512, "bob-secret"
            ),
        ]
    ) == {"wire-alice": None, "wire-bob": None}
    assert credential(zk, "wire-alice", SHA256).matches(SHA256, "alice-secret")
    assert admin.describe_user_scram_credentials(["wire-bob"])[0].credential_infos == (
        ScramCredentialInfo(SHA512, 4096),
    )
    described = kafka_admin.describe_user_scram_credentials(["wire-alice", "wire-nobody"])
    assert described["wire-alice"] == {
        "error": None,
        "credential_infos": [{"mechanism": mechanism.SCRAM_SHA_256, "iterations": 8192}],
    }
    assert described["wire-nobody"] == {
        "error": "Attempt to describe a user credential that does not exist",
        "credential_infos": [],
    }
    assert {"wire-alice", "wire-bob"} <= set(kafka_admin.describe_user_scram_credentials())
    assert kafka_admin.alter_user_scram_credentials(
        [
            kafka.admin.UserScramCredentialDeletion("wire-bob", mechanism.SCRAM_SHA_512),
            kafka.admin.UserScramCredentialUpsertion(
                "wire-carol", mechanism.SCRAM_SHA_256, "c", iterations=100
            ),
        ]
    ) == {
        "wire-bob": None,
        "wire-carol": "SCRAM-SHA-256 iterations must be between 4096 and 16384, not 100",
    }
    assert "wire-bob" not in set(kafka_admin.describe_user_scram_credentials())


def test_confluent_admin_alters_and_describes_users_over_the_wire(
    cluster: LocalCluster, zk: KazooClient
) -> None:
    client = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap_servers()})
    info = ConfluentCredentialInfo(ConfluentMechanism.SCRAM_SHA_512, 8192)
    futures = client.alter_user_scram_credentials(
        [ConfluentUpsertion("librdkafka-alice", info, b"alice-secret")]
    )
    futures["librdkafka-alice"].result(timeout=60)
    assert credential(zk, "librdkafka-alice", SHA512).matches(SHA512, "alice-secret")
    # Asked about named users, it answers a future per user (one future when asked about all).
    described = client.describe_user_scram_credentials(["librdkafka-alice"])
    assert isinstance(described, dict)
    description = described["librdkafka-alice"].result(timeout=60)
    assert [(c.mechanism, c.iterations) for c in description.scram_credential_infos] == [
        (ConfluentMechanism.SCRAM_SHA_512, 8192)
    ]
