"""Who a connection or a native client is: Kafka's ``KafkaPrincipal`` (``User:alice``).

A SASL listener names a connection after the user it authenticated; a PLAINTEXT listener, and an
SSL one that asks for no client certificate, after ``User:ANONYMOUS``; an SSL listener with
client certificates after the certificate's subject, as Kafka's default principal builder does.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True)
class KafkaPrincipal:
    """A principal by type and name; ``str`` gives Kafka's ``Type:name`` form."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @staticmethod
    def user(name: str) -> KafkaPrincipal:
        """The principal of a user."""
        return KafkaPrincipal(USER_TYPE, name)

    @staticmethod
    def parse(text: str) -> KafkaPrincipal:
        """``Type:name`` as a principal; ValueError names what is wrong with it."""
        principal_type, colon, name = text.partition(":")
        if not colon or not principal_type or not name:
            raise ValueError(f"{text!r} is not a principal of the form Type:name (User:alice)")
        return KafkaPrincipal(principal_type, name)


ANONYMOUS = KafkaPrincipal.user("ANONYMOUS")
"""The principal of a connection that did not authenticate."""


_SHORT_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
"""RFC 2253's short names of the attribute types ``ssl.getpeercert`` spells out."""


def certificate_principal(subject: tuple[tuple[tuple[str, str], ...], ...]) -> KafkaPrincipal:
    """The principal of a client certificate's subject (as ``ssl.SSLSocket.getpeercert`` gives
    it): its distinguished name in RFC 2253's form, most specific attribute first and special
    characters escaped, as Kafka's default principal builder writes it
    (``User:CN=alice,O=Example\\, Inc.``)."""
    names = [
        "+".join(f"{_SHORT_NAMES.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in reversed(subject)
    ]
    return KafkaPrincipal.user(",".join(names))


def _escape(value: str) -> str:
    """An attribute value with RFC 2253's special characters escaped."""
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;' else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
