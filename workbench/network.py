"""The one network probe the workbench makes before contacting a hub: can a TCP connection open?"""

from __future__ import annotations

import socket
from urllib.parse import urlparse


def endpoint_reachable(url: str, timeout_s: float = 3.0) -> bool:
    """Return True when a TCP connection to ``url``'s host and port opens within ``timeout_s``.

    Used to fail fast instead of letting a client retry for tens of seconds offline. DNS
    failure (the usual offline case) answers at once; a firewall that drops packets costs
    ``timeout_s`` seconds.

    Args:
        url: an ``http(s)://host[:port]/...`` address; the port defaults to 443 / 80.
        timeout_s: seconds to wait for the connection.
    """
    parsed = urlparse(url)
    if not parsed.hostname:
        return False
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout_s):
            return True
    except OSError:
        return False
