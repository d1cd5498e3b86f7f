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
from typing import Any, Callable, TypeVar

from .web import Guard

__all__ = ["limit"]

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
                if d.kind == "deny" and guard.on_breach is not None:
                    resp = guard.on_breach(req, d.result)
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
