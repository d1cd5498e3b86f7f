"""Django: a view decorator and a middleware.

settings.py:

    RLSTORE = {
        "DATABASE": BASE_DIR / "limits.db",     # or "LIMITER": a Limiter
        # for the middleware (every request):
        "ACTION": "api",                        # or a callable(request)
        "KEY": None,                            # None: the client address
        "PROXY_HEADER": "X-Forwarded-For",      # optional
        "TRUSTED_PROXIES": ["10.0.0.0/8"],      # optional
        "ON_BREACH": None,                      # callable(request, result)
    }
    MIDDLEWARE = [..., "rlstore.django.RateLimitMiddleware"]

views.py:

    from rlstore.django import ratelimit

    @ratelimit("signup")                        # keyed by client address
    def signup(request): ...

    @ratelimit("api", key=lambda request: str(request.user.pk))
    def items(request): ...

Keys, answers and options: rlstore.web.Guard (the option names in lower
case for the decorator); the request handed to the callables is Django's
HttpRequest, and on_breach may return an HttpResponse.  The Limiter of
settings.RLSTORE is opened once per process, on first use.
"""

import functools
import threading
from typing import Any, Callable, Dict, Optional, TypeVar

from ._limiter import Limiter
from .web import Decision, Guard

__all__ = ["ratelimit", "RateLimitMiddleware", "get_limiter"]

F = TypeVar("F", bound=Callable[..., Any])
_lock = threading.Lock()
_limiters: Dict[str, Limiter] = {}

_OPTIONS = {"KEY": "key", "COST": "cost", "PROXY_HEADER": "proxy_header",
            "TRUSTED_PROXIES": "trusted_proxies", "ON_BREACH": "on_breach",
            "POLICY": "policy", "HEADERS": "headers"}


def _settings() -> Dict[str, Any]:
    from django.conf import settings
    return dict(getattr(settings, "RLSTORE", {}))


def get_limiter() -> Limiter:
    """The Limiter of settings.RLSTORE: "LIMITER", or "DATABASE" opened
    once per process."""
    cfg = _settings()
    if cfg.get("LIMITER") is not None:
        lim: Limiter = cfg["LIMITER"]
        return lim
    if not cfg.get("DATABASE"):
        from django.core.exceptions import ImproperlyConfigured
        raise ImproperlyConfigured("settings.RLSTORE needs DATABASE or LIMITER")
    path = str(cfg["DATABASE"])
    with _lock:
        if path not in _limiters:
            _limiters[path] = Limiter(path, **cfg.get("OPTIONS", {}))
        return _limiters[path]


def _respond(guard: Guard, d: Decision, request: Any) -> Any:
    from django.http import HttpResponse
    resp = guard.breach(request, d)
    if resp is not None:
        return resp
    resp = HttpResponse(d.body, status=d.status, content_type="text/plain; charset=utf-8")
    for k, v in d.headers:
        resp[k] = v
    return resp


def _decide(guard: Guard, request: Any) -> Decision:
    return guard.decide(request, request.META.get("REMOTE_ADDR"), request.headers.get)


def ratelimit(action: Any, *, limiter: Any = None, **options: Any) -> Callable[[F], F]:
    """Limits a view (a function view; for a class-based view use Django's
    method_decorator).  limiter: default settings.RLSTORE's."""
    guard = Guard(limiter if limiter is not None else get_limiter, action, **options)

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapped(request: Any, *args: Any, **kwargs: Any) -> Any:
            d = _decide(guard, request)
            if d.kind != "pass":
                return _respond(guard, d, request)
            resp = view(request, *args, **kwargs)
            for k, v in d.headers:
                resp[k] = v
            return resp
        return wrapped  # type: ignore[return-value]
    return decorate


class RateLimitMiddleware:
    """The limit of settings.RLSTORE["ACTION"] on every request."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        from django.core.exceptions import ImproperlyConfigured
        cfg = _settings()
        if not cfg.get("ACTION"):
            raise ImproperlyConfigured("settings.RLSTORE needs ACTION for the middleware")
        opts = {v: cfg[k] for k, v in _OPTIONS.items() if k in cfg}
        self.get_response = get_response
        self.guard = Guard(get_limiter, cfg["ACTION"], **opts)

    def __call__(self, request: Any) -> Any:
        d = _decide(self.guard, request)
        if d.kind != "pass":
            return _respond(self.guard, d, request)
        resp = self.get_response(request)
        for k, v in d.headers:
            resp[k] = v
        return resp
