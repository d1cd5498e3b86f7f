"""What the framework glue shares: which action and key a request is
checked under, and what the answer to it is.  rlstore.wsgi, rlstore.asgi,
rlstore.flask and rlstore.django are thin layers over Guard.

The key of a request is, by default, the client's address: the peer of
the connection, or, when a proxy header is configured (proxy_header=
"X-Forwarded-For", or "X-Real-IP") and the peer is one of trusted_proxies
(default: the loopback addresses; a Unix socket, which has no peer
address, counts as local), the address that header gives.  The
header's list is read from the right, the end the proxies appended to:
addresses of trusted proxies are skipped and the first other one is the
client (what a client wrote itself, further left, is never read).  A
malformed address there is a 400 answer with a one-line reason, not a key.
Or key= is a callable of the request returning the key (str or bytes), or
None to let the request pass unchecked.

Answers: admitted requests go on, with the RateLimit-Policy and RateLimit
headers added (headers=False: none); a denied one gets 429 with
RateLimit-Policy, RateLimit and Retry-After (rls_format_headers(3)), or
what on_breach(request, result) returns if it returns a response; a
denial by the failure policy (the database could not answer and the
action's on_error is deny) gets 503, and is logged on the "rlstore"
logger; an invalid key (InvalidKey, e.g. an "ip" action given something
that is not an address) gets 400.  Other errors (UnknownAction: a
configuration error) propagate: the framework answers 500.
"""

import ipaddress
import logging
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import errors
from ._limiter import Limiter
from ._types import Result

log = logging.getLogger("rlstore")

DEFAULT_TRUSTED = ("127.0.0.0/8", "::1/128")
Header = Tuple[str, str]
_Net = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
_Addr = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


_shared_lock = threading.Lock()
_shared: Dict[str, Limiter] = {}


def shared_limiter(path: Any) -> Limiter:
    """The Limiter of path for this process: opened on first use, then the
    same one for every Guard (and thread) that names the path."""
    key = os.fsdecode(path)
    with _shared_lock:
        lim = _shared.get(key)
        if lim is None or lim.closed:
            lim = _shared[key] = Limiter(key)
        return lim


class BadRequest(Exception):
    """A request that cannot be keyed (a malformed proxy header): 400."""


def _addr(text: str) -> Optional[_Addr]:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_address(peer: Optional[str], header: Optional[str],
                   trusted: Sequence[_Net]) -> str:
    """The client's address: peer, or from header when peer is trusted.
    No peer at all is a Unix socket, which only local processes reach: a
    local proxy, believed like one on the loopback."""
    peer = peer or ""
    pa = _addr(peer)
    believed = not peer or (pa is not None and any(pa in n for n in trusted))
    if header is None or not believed:
        return str(pa) if pa is not None else peer
    entries = [e.strip() for e in header.split(",")]
    if len(header) > 8192 or not any(entries):
        raise BadRequest("malformed proxy header")
    last = None
    for e in reversed(entries):
        a = _addr(e)
        if a is None:
            raise BadRequest("malformed address in proxy header: %r" % e[:64])
        last = a
        if not any(a in n for n in trusted):
            return str(a)
    return str(last)


class Decision:
    """kind "pass" (headers to add), "deny" (429 or 503) or "bad" (400)."""

    __slots__ = ("kind", "status", "headers", "body", "result")

    def __init__(self, kind: str, status: int, headers: List[Header], body: bytes,
                 result: Optional[Result]):
        self.kind, self.status, self.headers, self.body, self.result = \
            kind, status, headers, body, result

    @property
    def status_line(self) -> str:
        return {200: "200 OK", 400: "400 Bad Request", 429: "429 Too Many Requests",
                503: "503 Service Unavailable"}[self.status]

    @property
    def response_headers(self) -> List[Header]:
        return [("Content-Type", "text/plain; charset=utf-8")] + self.headers


PASS = Decision("pass", 200, [], b"", None)


class Guard:
    """One limit on requests.

    limiter          a Limiter (or an AsyncLimiter, for ASGI), a path (opened
                     on first use, one Limiter per path and process:
                     shared_limiter) or a callable returning one
    action           the action name, or a callable(request) -> name or
                     None (None: not limited)
    key              None: the client address (above); or callable(request)
                     -> str, bytes or None (None: not limited)
    cost             units per request, or callable(request) -> int
    proxy_header     e.g. "X-Forwarded-For"; None (default): the peer only
    trusted_proxies  addresses or networks whose proxy header is believed
    on_breach        callable(request, result) called on every denial; a
                     response it returns is sent instead of the 429
    policy           the policy name in the headers (default: the deciding
                     limit's; a blocked key's: the action)
    headers          add RateLimit headers to admitted responses too
    """

    def __init__(self, limiter: Any, action: Any, *, key: Optional[Callable[[Any], Any]] = None,
                 cost: Any = 1, proxy_header: Optional[str] = None,
                 trusted_proxies: Sequence[str] = DEFAULT_TRUSTED,
                 on_breach: Optional[Callable[[Any, Result], Any]] = None,
                 policy: Optional[str] = None, headers: bool = True) -> None:
        if not (isinstance(action, str) or callable(action)):
            raise errors.InvalidArgument("action must be a name or a callable")
        if key is not None and not callable(key):
            raise errors.InvalidArgument("key must be None (the client address) or a callable")
        self._limiter_spec = limiter
        self._limiter: Any = None
        self._open_lock = threading.Lock()
        self.action = action
        self.key = key
        self.cost = cost
        self.proxy_header = proxy_header
        try:
            self.trusted = [ipaddress.ip_network(t, strict=False) for t in trusted_proxies]
        except ValueError as e:
            raise errors.InvalidArgument("trusted_proxies: %s" % e) from None
        self.on_breach = on_breach
        self.policy = policy
        self.add_headers = headers

    @property
    def limiter(self) -> Any:
        """The Limiter, opened or asked for on first use."""
        if self._limiter is None:
            with self._open_lock:
                if self._limiter is None:
                    spec = self._limiter_spec
                    if isinstance(spec, (str, bytes, os.PathLike)):
                        self._limiter = shared_limiter(spec)
                    elif callable(spec) and not hasattr(spec, "check"):
                        self._limiter = spec()
                    else:
                        self._limiter = spec
        return self._limiter

    def request_of(self, request: Any, peer: Optional[str],
                   get_header: Callable[[str], Optional[str]]) -> Optional[Tuple[str, Any, int]]:
        """(action, key, cost) of a request, or None when it is not limited.
        Raises BadRequest."""
        action = self.action(request) if callable(self.action) else self.action
        if action is None:
            return None
        if self.key is not None:
            key = self.key(request)
        else:
            hdr = get_header(self.proxy_header) if self.proxy_header else None
            key = client_address(peer, hdr, self.trusted)
        if key is None:
            return None
        cost = self.cost(request) if callable(self.cost) else self.cost
        return action, key, cost

    def answer(self, r: Result, action: str = "") -> Decision:
        """The Decision for a check's result.  The policy named in the
        headers: the Guard's policy, else the deciding limit, else (a
        blocked key has none) the action."""
        policy = self.policy or r.rule or action or None
        if r.error is not None:
            log.warning("rlstore: %s decided by the failure policy: %s",
                        "admitted" if r.allowed else "denied", r.error)
        if r.allowed:
            if not self.add_headers or r.degraded:
                return Decision("pass", 200, [], b"", r)
            return Decision("pass", 200, r.header_list(policy), b"", r)
        if r.degraded:
            return Decision("deny", 503, [], b"rate limiter unavailable\n", r)
        return Decision("deny", 429, r.header_list(policy), b"rate limit exceeded\n", r)

    def breach(self, request: Any, d: Decision) -> Any:
        """What on_breach returns for a denial (None: the default answer)."""
        if self.on_breach is None or d.kind != "deny" or d.result is None:
            return None
        return self.on_breach(request, d.result)

    @staticmethod
    def bad(why: str) -> Decision:
        line = why.replace("\r", " ").replace("\n", " ")[:200]
        return Decision("bad", 400, [], (line + "\n").encode("utf-8", "replace"), None)

    def decide(self, request: Any, peer: Optional[str],
               get_header: Callable[[str], Optional[str]]) -> Decision:
        """Checks a request (synchronously)."""
        try:
            req = self.request_of(request, peer, get_header)
            if req is None:
                return PASS
            return self.answer(self.limiter.check(*req), req[0])
        except BadRequest as e:
            return self.bad(str(e))
        except errors.InvalidKey as e:
            return self.bad("invalid rate-limit key: %s" % e.message)

    async def decide_async(self, request: Any, peer: Optional[str],
                           get_header: Callable[[str], Optional[str]]) -> Decision:
        """Checks a request without blocking the event loop: through an
        AsyncLimiter (one is made over a Limiter)."""
        from .aio import AsyncLimiter
        try:
            req = self.request_of(request, peer, get_header)
            if req is None:
                return PASS
            lim = self.limiter
            if not isinstance(lim, AsyncLimiter):
                with self._open_lock:
                    if not isinstance(self._limiter, AsyncLimiter):
                        self._limiter = AsyncLimiter(limiter=lim)
                    lim = self._limiter
            return self.answer(await lim.check(*req), req[0])
        except BadRequest as e:
            return self.bad(str(e))
        except errors.InvalidKey as e:
            return self.bad("invalid rate-limit key: %s" % e.message)
