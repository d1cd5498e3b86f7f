"""Flask: a decorator that limits a view.

    import rlstore
    from rlstore.flask import limit

    limiter = rlstore.Limiter("limits.db")

    @app.route("/login", methods=["POST"])
    @limit(limiter, "login")                          # keyed by client address
    def login(): ...

    @app.route("/api/items")
    @limit(limiter, "api", key=lambda request: request.headers.get("X-Api-Key"))
    def items(): ...

Keys, answers and options: rlstore.web.Guard; the request handed to the
action, key, cost and on_breach callables is flask.request.  on_breach may
return anything Flask accepts as a view's return value.  For a limit on
every request use rlstore.wsgi.RateLimitMiddleware on app.wsgi_app.
"""

import functools
from typing import Any, Callable, Optional, Sequence, TypeVar

import ipaddress

from .web import DEFAULT_TRUSTED, BadRequest, Guard, client_address

__all__ = ["limit", "remote_address"]

F = TypeVar("F", bound=Callable[..., Any])


def limit(limiter: Any, action: Any, **options: Any) -> Callable[[F], F]:
    guard = Guard(limiter, action, **options)

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            import flask
            req = flask.request
            d = guard.decide(req, req.remote_addr, req.headers.get)
            if d.kind != "pass":
                resp = guard.breach(req, d)
                if resp is not None:
                    return flask.make_response(resp)
                return flask.make_response(d.body, d.status, d.response_headers)
            resp = flask.make_response(view(*args, **kwargs))
            for k, v in d.headers:
                resp.headers[k] = v
            return resp
        wrapped.rlstore_guard = guard  # type: ignore[attr-defined]
        return wrapped  # type: ignore[return-value]
    return decorate


def remote_address(proxy_header: Optional[str] = None,
                   trusted_proxies: Sequence[str] = DEFAULT_TRUSTED) -> str:
    """The client address of the current request, as the decorator keys
    it (rlstore.web.client_address); a malformed proxy header aborts the
    request with 400."""
    import flask
    req = flask.request
    hdr = req.headers.get(proxy_header) if proxy_header else None
    try:
        return client_address(req.remote_addr, hdr,
                              [ipaddress.ip_network(n, strict=False) for n in trusted_proxies])
    except BadRequest as e:
        flask.abort(400, str(e))
        raise  # not reached: abort raises
