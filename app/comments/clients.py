"""Which client a request comes from, for the rate limit.

The direct peer (REMOTE_ADDR) is the client unless it is a trusted proxy; then
X-Forwarded-For is walked from the right, skipping trusted proxies, and the first
address a trusted proxy vouches for is the client. Entries further left were written
by the client itself and are never believed.
"""

from __future__ import annotations

import ipaddress

import falcon

from app.config import IPNetwork

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def client_identity(
    req: falcon.Request, trusted: tuple[IPNetwork, ...], unix_trusted: bool = False
) -> str:
    """`unix_trusted`: a peer without an IP address (a unix socket) is a trusted proxy."""
    peer = _parse(req.remote_addr)
    if peer is None and not unix_trusted:
        # Unix socket or a server that sets no address: all such peers share one bucket.
        return f"peer:{req.remote_addr}"
    if peer is not None and not (trusted and _trusted(peer, trusted)):
        return _bucket(peer)
    client = peer
    for hop in reversed((req.get_header("X-Forwarded-For") or "").split(",")):
        hop = hop.strip()
        if not hop:
            continue
        address = _parse(hop)
        if address is None:
            # Written by a trusted proxy ("unknown", an obfuscated node): keep it as the
            # client's name rather than trusting anything to its left.
            return f"forwarded:{hop[:100]}"
        client = address
        if not _trusted(address, trusted):
            break
    if client is None:  # a trusted unix peer that named nobody
        return f"peer:{req.remote_addr}"
    return _bucket(client)


def _parse(text: str) -> IPAddress | None:
    text = text.strip()
    if text.startswith("["):  # "[2001:db8::1]:443"
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # "203.0.113.7:5123"
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: IPAddress, trusted: tuple[IPNetwork, ...]) -> bool:
    return any(address.version == net.version and address in net for net in trusted)


def _bucket(address: IPAddress) -> str:
    # An IPv6 subscriber usually holds a whole /64 and can rotate addresses inside it
    # at will, so the /64 is the unit that gets rate-limited.
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
