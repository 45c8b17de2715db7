"""Where the server may send requests a client named (webhooks): http or https URLs whose
every address is public, unless the operator allowed a network
(`AGENTCTL_WEBHOOK_ALLOW_NETWORKS`; `agentctl dev` allows loopback).

A client must not make the server reach what only the server can: loopback, link-local
(cloud metadata at 169.254.169.254), private, shared (carrier-grade NAT), multicast,
unspecified or reserved addresses. A host name is checked on what it resolves to, at
submit time and again right before each delivery, which then connects to the very address
checked (a name that resolves elsewhere the second time cannot slip through).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)
MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT = 5.0


class Refused(ValueError):
    """A URL the server will not send to; the message says why (and names no secret)."""


class Unresolved(Refused):
    """A host name that resolves to no address (yet)."""


@dataclass(frozen=True)
class Target:
    """A checked URL: its parts, and the host as the request names it."""

    url: str
    parts: SplitResult
    host: str
    port: int

    @property
    def safe(self) -> str:
        """The URL without its credentials and query string: fit for a log line."""
        netloc = self.parts.netloc.rpartition("@")[2]
        return f"{self.parts.scheme}://{netloc}{self.parts.path}"

    def pinned(self, address: Address) -> str:
        """The URL with its host replaced by `address` (credentials, path and query kept)."""
        userinfo, at, _ = self.parts.netloc.rpartition("@")
        literal = f"[{address}]" if address.version == 6 else str(address)
        netloc = f"{userinfo}{at}{literal}:{self.port}"
        return self.parts._replace(netloc=netloc).geturl()

    @property
    def host_header(self) -> str:
        default = 443 if self.parts.scheme == "https" else 80
        literal = f"[{self.host}]" if ":" in self.host else self.host
        return literal if self.port == default else f"{literal}:{self.port}"


def parse_networks(text: str | None) -> tuple[Network, ...]:
    """`10.0.0.0/8, 127.0.0.1` as networks; ValueError naming an entry that is not one."""
    networks = []
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"{entry!r} is not an address or network (e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8)"
            ) from None
    return tuple(networks)


def parse_target(url: str) -> Target:
    """`url` when it is an absolute http or https URL with a host; `Refused` otherwise."""
    if len(url) > MAX_URL_LENGTH:
        raise Refused(f"a URL of at most {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused("not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("must be an http:// or https:// URL")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("the URL names no host")
    if any(c.isspace() for c in url):
        raise Refused("the URL must not contain spaces")
    try:
        host.encode("idna")  # what resolving it takes: labels of 1 to 63 characters
    except UnicodeError:
        raise Refused(f"{host!r} is not a valid host name") from None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return Target(url, parts, host, port)


def why_refused(address: Address, allowed: Iterable[Network]) -> str | None:
    """What kind of non-public address `address` is, or None when it may be reached."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in allowed):
        return None
    for kind in ("loopback", "link_local", "multicast", "unspecified", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    if not address.is_global:
        return "non-public"
    return None


async def resolve(host: str, port: int) -> list[Address]:
    """The addresses `host` names (itself when it is an address); `Refused` when it names
    none."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        raise Unresolved(f"the host {host!r} does not resolve") from None
    found: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if address not in found:
            found.append(address)
    if not found:
        raise Unresolved(f"the host {host!r} does not resolve")
    return found


def check_addresses(
    target: Target, addresses: Sequence[Address], allowed: Iterable[Network]
) -> None:
    """`Refused` when any of the addresses `target`'s host resolves to may not be reached."""
    allowed = tuple(allowed)
    for address in addresses:
        kind = why_refused(address, allowed)
        if kind is not None:
            shown = target.host if target.host == str(address) else f"{target.host} ({address})"
            raise Refused(
                f"{shown} is not a public address ({kind}), which webhooks may not reach — use "
                "a public one, or have the operator allow its network "
                "(AGENTCTL_WEBHOOK_ALLOW_NETWORKS)"
            )


async def checked_addresses(target: Target, allowed: Iterable[Network]) -> list[Address]:
    """The addresses of `target`'s host, every one of them allowed; `Refused` otherwise."""
    addresses = await resolve(target.host, target.port)
    check_addresses(target, addresses, allowed)
    return addresses
