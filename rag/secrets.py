"""Keeping secrets out of what is shown or stored: connection strings and provider answers.

``mask_connection`` hides the password of every connection string form in a
text: URLs (any scheme, a misspelt one too, and passwords holding ``@``, ``:``
or ``/``), ``password=`` query parameters and libpq ``key=value`` strings
(quoted values included). Every message naming a database and ``rag config`` /
``rag status`` pass through it.

``scrub`` removes an API key and any ``Bearer``/``Authorization`` value from a
provider's error body before it becomes part of a message or a run record.
"""

import re
from collections.abc import Iterable

MASK = "****"

# scheme://user:password@host — the password runs to the last "@" that is
# followed by a host, so one holding "@" is masked whole. Over-masking an "@"
# in a query string is the safe side.
_URL_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/\s\"']*:)(?P<password>\S*)@"
)
# password=... in a query string or a key=value string; a quoted value may hold spaces.
_KEY_VALUE_PASSWORD = re.compile(
    r"(?P<head>\b(?:ssl)?password\s*=\s*)(?P<password>'(?:[^'\\]|\\.)*'?|(?:[^\s&'\"]|&(?![A-Za-z_]+=))+)",
    re.IGNORECASE,
)
# libpq splits an unencoded "@" in a password at the first one and reports the
# rest as the host: "failed to resolve host 'ss@w0rd@db.example'".
_HOST_HOLDING_AT = re.compile(r"(?P<head>\bhost\s+[\"']?)[^\s\"']*@")
_BEARER = re.compile(r"(?P<head>\bBearer\s+)[^\s\"',;})\]]+", re.IGNORECASE)
_AUTHORIZATION = re.compile(
    r"(?P<head>\b(?:Proxy-)?Authorization\b[\"']?\s*[:=]\s*[\"']?)(?:Bearer\s+|Basic\s+|Token\s+)?[^\s\"',;})\]]+",
    re.IGNORECASE,
)
# The shortest key worth looking for: shorter strings would hide ordinary words.
_MIN_SECRET_LENGTH = 6


def mask_connection(text: str) -> str:
    """``text`` with the password of every connection string in it shown as ``****``."""
    masked = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    masked = _HOST_HOLDING_AT.sub(lambda m: f"{m['head']}{MASK}@", masked)
    return _KEY_VALUE_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", masked)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given secrets and any Bearer or Authorization value."""
    for secret in secrets:
        if len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, MASK)
    text = _AUTHORIZATION.sub(lambda m: f"{m['head']}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m['head']}{MASK}", text)
