"""Keeping secrets out of what is shown or stored: connection strings and provider answers.

``mask_connection`` hides the password of every connection string form in a
text: URLs (any scheme, a misspelt one too, and passwords holding ``@``, ``:``
or ``/``), ``password=`` query parameters and libpq ``key=value`` strings
(quoted values included). Every message naming a database and ``rag config`` /
``rag status`` pass through it.

``mask_unparsed`` shows a connection string that neither libpq's URL nor its key=value
syntax reads (``postgres:/u:pw@h``, a password holding a space): anything in it that may be
a credential is masked whole, and ``mask_parse_error`` does the same to libpq's complaint about it.

``scrub`` removes an API key and any ``Bearer``/``Authorization`` value from a
provider's error body before it becomes part of a message or a run record;
``without_secrets`` removes the given secrets alone (from what an LLM writes).
"""

import re
from collections.abc import Iterable

MASK = "****"

# scheme://user:password@host (or misspelt: scheme:/, scheme//, scheme:) — the password runs
# to the last "@" that is followed by a host, so one holding "@" is masked whole.
# Over-masking an "@" in a query string is the safe side.
# A password may hold a newline or a tab (not a space: prose around a URL would go too).
_URL_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*(?::/{0,3}|//)[^:@/\s\"']*:)(?P<password>[^ \f\v]*)@"
)
# scheme://user:password/db with no "@": libpq reads user as the host and password as the
# port, so what is not a port number there is masked.
_URL_PORTLIKE_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/\s\"'\[]*:)(?P<password>[^/?#@\s\"']*[^/?#@\s\"'\d][^/?#@\s\"']*)"
    r"(?=[/?#\s\"']|$)"
)
# libpq's complaint about such a "port"
_PORT_VALUE = re.compile(r'(?P<head>invalid integer value ")[^"]*(?=" for connection option "port")')
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
    masked = _URL_PORTLIKE_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", masked)
    masked = _PORT_VALUE.sub(lambda m: f"{m['head']}{MASK}", masked)
    masked = _HOST_HOLDING_AT.sub(lambda m: f"{m['head']}{MASK}@", masked)
    return _KEY_VALUE_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", masked)


# password=... up to the next key=, for a key=value string whose value holds unquoted spaces
_SPACED_PASSWORD = re.compile(r"(?P<head>\b(?:ssl)?password\s*=\s*).*?(?=\s+\w+\s*=|$)", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]*)"')


def mask_unparsed(text: str) -> str:
    """A connection string we failed to parse, with what may be a credential masked: everything
    between its first ":" and its last "@" (the user name may go with it), and a password= value
    up to the next key."""
    colon, at = text.find(":"), text.rfind("@")
    if 0 <= colon < at:
        text = f"{text[:colon + 1]}{MASK}{text[at:]}"
    return mask_connection(_SPACED_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text))


def mask_parse_error(message: str, url: str) -> str:
    """libpq's complaint about ``url``, which it could not parse: a piece of ``url`` it quotes is
    shown as ``mask_unparsed`` shows the whole, and a piece of what that masks as ``****``."""
    shown = mask_unparsed(url)

    def piece(match: re.Match[str]) -> str:
        quoted = match[1]
        if quoted == url:
            return f'"{shown}"'
        if quoted in url and quoted not in shown:
            return f'"{MASK}"'
        return f'"{mask_unparsed(quoted)}"'

    return mask_unparsed(_QUOTED.sub(piece, message))


def without_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (those long enough to be one) shown as ``****``."""
    for secret in secrets:
        if len(secret) >= _MIN_SECRET_LENGTH and secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given secrets and any Bearer or Authorization value."""
    text = without_secrets(text, secrets)
    text = _AUTHORIZATION.sub(lambda m: f"{m['head']}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m['head']}{MASK}", text)
