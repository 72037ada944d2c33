"""Declarations of the SASL APIs, taken from Kafka's message JSON.

As in ``rafka.protocol.wire.apis``: field lists, version ranges, nullable versions and defaults
follow Apache Kafka's ``clients/src/main/resources/common/message/*.json`` with snake_case names.
SaslHandshake version 0 is left out: after it a client sends raw SASL tokens without Kafka's
framing, which only very old clients do; version 1 wraps the tokens in SaslAuthenticate, which
kafka-python, librdkafka and aiokafka all use.

Versions served: SaslHandshake 1, SaslAuthenticate 0-2.
"""

from __future__ import annotations

from rafka.protocol.wire.schema import BYTES, INT16, INT64, STRING, ArrayOf, Field
from rafka.protocol.wire.schema import declare_api as _api

SASL_HANDSHAKE = _api(
    17,
    "SaslHandshake",
    versions="1",
    flexible="none",
    request=(Field("mechanism", STRING),),
    response=(Field("error_code", INT16), Field("mechanisms", ArrayOf(STRING))),
)

SASL_AUTHENTICATE = _api(
    36,
    "SaslAuthenticate",
    versions="0-2",
    flexible="2+",
    request=(Field("auth_bytes", BYTES),),
    response=(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("auth_bytes", BYTES),
        Field("session_lifetime_ms", INT64, "1+", default=0),
    ),
)
