"""The one masking of secrets for display: keys, credentials inside URLs, and secret values nested at any depth.

Used by ``ironhive set``/``get``, ``ironhive config``, the doctor and the execution log, so a secret looks the same
(and is hidden the same way) wherever it is printed:

- a secret shows at most its last 4 characters and never more than a quarter of its length (``***mnop`` for a
  16-character key, ``***kl`` for 8 to 11 characters, ``***`` alone below 4);
- in a URL the user information (``https://user:pass@host``) and the values of query or fragment parameters named
  like a credential (``api-key``, ``token``, ``sig``...) are replaced by ``***``;
- in a mapping, the value of every key named like a secret (``apiKey``, ``token``, ``password``, an
  ``Authorization`` header...) is masked, at any depth, inside lists too, and so is a header written as one line
  (``"Authorization: Bearer ..."``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ironhive.adapters.config.schema import is_secret_key

MASK = "***"
SHOWN_AT_MOST = 4
"""The most characters of a secret ever shown (and never more than a quarter of its length)."""

# Names that hold a credential besides the ones ``is_secret_key`` knows (header and field spellings).
_SECRET_NAME_PARTS = ("apikey", "secret", "password", "passwd", "authorization", "credential", "cookie", "privatekey")
_SECRET_NAMES = frozenset({"auth", "pwd"})
# Query and fragment parameters: broader, since a URL carries nothing else worth showing under such a name.
_PARAMETER_PARTS = ("key", "token", "secret", "password", "passwd", "pwd", "sig", "auth", "credential", "session")

# Both patterns start only at a boundary and bound their names: linear on a 100 000-character tool argument.
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s\"'<>`]+")
_PARAMETER = re.compile(r"(?<=[?&;#])(?P<name>[^=&;?#]{1,256})=(?P<value>[^&;#]*)")


def mask_secret(value: str) -> str:
    """``***`` followed by at most the last 4 characters, never more than a quarter of ``value``'s length."""
    shown = min(SHOWN_AT_MOST, len(value) // 4)
    return MASK + value[len(value) - shown :] if shown else MASK


def is_secret_name(name: str) -> bool:
    """Whether a key or header name (or the last segment of a dotted key) names a secret.

    ``apiKey``, ``api_key``, ``X-Api-Key``, ``token``/``hfToken``, ``clientSecret``, ``password``, ``Authorization``,
    ``Proxy-Authorization``, ``Cookie`` and ``credentials`` do; ``maxContextTokens`` or ``keepAlive`` do not.
    """
    last = name.rsplit(".", 1)[-1]
    folded = _fold(last)
    return is_secret_key(last) or folded in _SECRET_NAMES or any(part in folded for part in _SECRET_NAME_PARTS)


def mask_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it masked (user information, credential-named parameters)."""
    return _URL.sub(lambda match: _mask_url(match.group(0)), text)


def mask_value(name: str, value: Any) -> Any:
    """``value`` as it may be shown under the key ``name``: secrets masked at any depth, URL credentials masked.

    Args:
        name: The key the value is stored under (a dotted key counts by its last segment).
        value: A scalar, mapping or list, as read from a config file.

    Returns:
        A copy with every secret masked; mappings keep their keys and order.
    """
    if isinstance(value, Mapping):
        return {key: mask_value(str(key), item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(name, item) for item in value]
    if value is None or isinstance(value, bool):
        return value
    if is_secret_name(name):
        return mask_secret(str(value))
    if isinstance(value, str):
        return _mask_header_line(value)
    return value


def _mask_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority_end = min((index for index in (rest.find(c) for c in "/?#") if index >= 0), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        authority = f"{MASK}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    return f"{scheme}://{authority}{_PARAMETER.sub(_mask_parameter, tail)}"


def _mask_parameter(match: re.Match[str]) -> str:
    name = match.group("name")
    folded = _fold(unquote(name))
    if match.group("value") and any(part in folded for part in _PARAMETER_PARTS):
        return f"{name}={MASK}"
    return match.group(0)


def _mask_header_line(line: str) -> str:
    """``Authorization: Bearer x`` (a header written as one line) → ``Authorization: ***x``; URLs in it masked."""
    name, separator, value = line.partition(":")
    if separator and "\n" not in line and is_secret_name(name.strip()) and value.strip():
        return f"{name}{separator} {mask_secret(value.strip())}"
    return mask_urls(line)


def _fold(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()
