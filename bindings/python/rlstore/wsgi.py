"""WSGI middleware: one rate limit on every request of a WSGI application
(Flask, Django, Pyramid, Bottle...).

    from rlstore.wsgi import RateLimitMiddleware
    app.wsgi_app = RateLimitMiddleware(app.wsgi_app, "limits.db", "api",
                                       proxy_header="X-Forwarded-For")

Keys, answers and options: rlstore.web.Guard.  The request handed to the
action, key, cost and on_breach callables is the WSGI environ; a response
on_breach returns is a WSGI application (a werkzeug or Django response
is one) that is called to answer.
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .web import Decision, Guard

__all__ = ["RateLimitMiddleware"]


def _getter(environ: Dict[str, Any]) -> Callable[[str], Optional[str]]:
    def get(name: str) -> Optional[str]:
        return environ.get("HTTP_" + name.upper().replace("-", "_"))
    return get


class RateLimitMiddleware:
    def __init__(self, app: Callable[..., Iterable[bytes]], limiter: Any, action: Any,
                 **options: Any) -> None:
        self.app = app
        self.guard = Guard(limiter, action, **options)

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        d = self.guard.decide(environ, environ.get("REMOTE_ADDR"), _getter(environ))
        if d.kind == "pass":
            if not d.headers:
                return self.app(environ, start_response)
            return self.app(environ, _adding(start_response, d.headers))
        return self.refuse(d, environ, start_response)

    def refuse(self, d: Decision, environ: Dict[str, Any],
               start_response: Callable[..., Any]) -> Iterable[bytes]:
        resp = self.guard.breach(environ, d)
        if resp is not None:
            out: Iterable[bytes] = resp(environ, start_response)
            return out
        start_response(d.status_line, d.response_headers)
        return [d.body]


def _adding(start_response: Callable[..., Any],
            extra: List[Tuple[str, str]]) -> Callable[..., Any]:
    def sr(status: str, headers: List[Tuple[str, str]], exc_info: Any = None) -> Any:
        if exc_info is not None:
            return start_response(status, list(headers) + extra, exc_info)
        return start_response(status, list(headers) + extra)
    return sr
