"""Kafka's binary wire protocol: primitive types, message declarations, headers and frames.

``primitives`` reads and writes Kafka's primitive types; ``schema`` is the declaration language
from which every message's encoding and decoding derive; ``headers`` holds request and response
headers and size-prefixed framing; ``apis`` declares the APIs served; ``registry`` answers
ApiVersions from those declarations and encodes and decodes whole frames.

Imports only ``rafka.protocol.errors`` of rafka; no Ray, no sockets.
"""
