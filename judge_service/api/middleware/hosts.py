"""Which names the service answers to: the Host header checked against the bind address (DNS rebinding).

A web page can make a browser send requests to a name of the page's own that resolves to this service's
address (127.0.0.1, a LAN address); the browser then lets the page read the answers, since to it they
come from the page's own origin. Without API keys (the default) such a page could read every judgement
and prune. Its requests always carry the page's name in `Host`, so the service answers only to:

- the address it is bound to (JUDGE_HOST), and, bound to loopback, localhost names (`localhost`,
  `*.localhost`, 127.0.0.0/8, ::1);
- bound to every interface (0.0.0.0, ::): any IP address and localhost names (the address a client used
  may be translated on the way: a container's published port, a Service's cluster IP);
- the address the connection reached (scope["server"]): for in-process clients, the name they called;
- the names in JUDGE_ALLOWED_HOSTS (a name, `.example.com` for it and its subdomains, `*` for any).

An IP address in `Host` cannot be a rebinding (the page's origin would be that address), so none of the
above lets a page in. A request without `Host` (HTTP/1.0) is not a browser's and is let through.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.responses import Response
from starlette.types import Scope

from judge_service.api.errors import error_response

_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
_ACCEPTED_KEPT = 256  # Host values remembered as accepted: the usual check is one set lookup


def host_name(value: str) -> str:
    """The name in a Host header or setting entry: lowercased, without port, brackets or a trailing dot;
    an IPv4-mapped IPv6 address as its IPv4 address."""
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        name = text[1:end] if end > 0 else text
    elif text.count(":") == 1:
        name = text.partition(":")[0]
    else:
        name = text  # a name, or an IPv6 address without brackets
    name = name.rstrip(".")
    if name.startswith("::ffff:") and "." in name:
        name = name[len("::ffff:") :]
    return name


class HostPolicy:
    """The names requests may call the service by (module docstring)."""

    def __init__(self, bind_host: str, allowed: Iterable[str] = ()) -> None:
        """`allowed`: JUDGE_ALLOWED_HOSTS's entries (config.parse_allowed_hosts)."""
        allowed = tuple(e.lower().rstrip(".") if e.startswith(".") else host_name(e) for e in allowed)
        bind = host_name(bind_host)
        self.bind_host = bind_host
        self.any_name = "*" in allowed
        self.every_interface = bind in _WILDCARD_BINDS
        self.loopback = self.every_interface or _is_local(bind)
        names = {name for name in allowed if name != "*" and not name.startswith(".")}
        if not self.every_interface:
            names.add(bind)
        self._names = frozenset(names)
        self._domains = tuple(name for name in allowed if name.startswith("."))
        self._accepted: set[bytes] = set()

    def refused(self, scope: Scope) -> str | None:
        """The Host the request names when the service does not answer to it; None when it does."""
        if self.any_name:
            return None
        host = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
                break
        if host is None or host in self._accepted:
            return None
        text = host.decode("latin-1")
        if not self._answers_to(host_name(text), scope.get("server")):
            return text
        if len(self._accepted) < _ACCEPTED_KEPT:
            self._accepted.add(host)
        return None

    def refusal(self, host: str) -> Response:
        """400 host_not_allowed: what the service answers to, and the setting that adds a name."""
        known = ["any IP address", "localhost"] if self.every_interface else [self.bind_host]
        if self.loopback and not self.every_interface:
            known.append("localhost")
        known += sorted(self._names - {host_name(self.bind_host)}) + [f"*{d}" for d in self._domains]
        return error_response(
            400,
            "host_not_allowed",
            f"this service does not answer to the name {host[:100]!r} (the Host header); it answers to "
            f"{', '.join(known[:10])}. If the name is this service's, an operator adds it to "
            "JUDGE_ALLOWED_HOSTS (comma-separated; '*' for any name). The check keeps a web page whose "
            "own name resolves to this service (DNS rebinding) from reading it",
            {"host": host[:100]},
        )

    def _answers_to(self, name: str, server: tuple[str, int | None] | None) -> bool:
        if name in self._names:
            return True
        if any(name == domain[1:] or name.endswith(domain) for domain in self._domains):
            return True
        if self.loopback and _is_local(name):
            return True
        if self.every_interface and _ip(name) is not None:
            return True
        return server is not None and name == host_name(str(server[0]))


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _is_local(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _ip(name)
    return address is not None and address.is_loopback
