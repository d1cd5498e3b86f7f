"""ASGI middleware: one rate limit on every HTTP request of an ASGI
application (Starlette, FastAPI, Quart, Django's ASGI handler...).  The
check runs in an executor thread (rlstore.aio): the event loop never
waits for the database.

    from rlstore.asgi import RateLimitMiddleware
    app = RateLimitMiddleware(app, "limits.db", "api")
    # Starlette: app.add_middleware(RateLimitMiddleware, limiter=..., action="api")

Keys, answers and options: rlstore.web.Guard.  The request handed to the
action, key, cost and on_breach callables is the ASGI scope; a response
on_breach returns is an ASGI application (a Starlette Response is one).
limiter may be an rlstore.aio.AsyncLimiter, a Limiter or a path.
Websocket and lifespan scopes pass unchecked.
"""

from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from .web import Guard

__all__ = ["RateLimitMiddleware"]

Scope = Dict[str, Any]
Send = Callable[[Dict[str, Any]], Awaitable[None]]


def _getter(scope: Scope) -> Callable[[str], Optional[str]]:
    def get(name: str) -> Optional[str]:
        want = name.lower().encode("latin-1")
        vals = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == want]
        return ", ".join(vals) if vals else None
    return get


def _encode(headers: List[Tuple[str, str]]) -> List[Tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


class RateLimitMiddleware:
    def __init__(self, app: Callable[..., Awaitable[None]], limiter: Any, action: Any,
                 **options: Any) -> None:
        self.app = app
        self.guard = Guard(limiter, action, **options)

    async def __call__(self, scope: Scope, receive: Any, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        d = await self.guard.decide_async(scope, client[0] if client else None, _getter(scope))
        if d.kind == "pass":
            if not d.headers:
                await self.app(scope, receive, send)
                return
            extra = _encode(d.headers)

            async def adding(message: Dict[str, Any]) -> None:
                if message.get("type") == "http.response.start":
                    message = dict(message)
                    message["headers"] = list(message.get("headers", [])) + extra
                await send(message)
            await self.app(scope, receive, adding)
            return
        resp = self.guard.breach(scope, d)
        if resp is not None:
            await resp(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": d.status,
                    "headers": _encode(d.response_headers)})
        await send({"type": "http.response.body", "body": d.body})
