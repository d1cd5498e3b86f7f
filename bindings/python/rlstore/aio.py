"""asyncio API: AsyncLimiter, whose calls never block the event loop.

Every call of the C library may wait (for SQLite's write lock, up to the
busy timeout; for a PostgreSQL round trip), so AsyncLimiter runs each one
in a thread of its own executor and awaits it; the loop keeps serving
other tasks meanwhile.  ctypes releases the GIL during the C call.

    limiter = await rlstore.aio.open("limits.db")
    r = await limiter.check("api", user)

    async with limiter.reserve("signup", ip) as res:   # commit / cancel
        if res.allowed:
            await create_account()

The executor: by default one worker thread per AsyncLimiter (the calls of
one Limiter take turns anyway: a handle serves one thread at a time), so a
database stalled on its lock does not fill the loop's default executor;
pass executor= to share one.  After fork() a child makes its own.
"""

import asyncio
import concurrent.futures
import functools
import os
from typing import Any, Awaitable, Callable, Generator, List, Optional, TypeVar

from ._limiter import Limiter, Reservation
from ._types import Explanation, Key, Result, Row, RulesDescription, Stats

T = TypeVar("T")

__all__ = ["AsyncLimiter", "AsyncReservation", "open"]


class AsyncReservation:
    """An awaited reserve(): the Reservation's id, result and allowed, and
    async commit()/cancel().  As an async context manager the block's end
    commits, an exception cancels."""

    def __init__(self, limiter: "AsyncLimiter", res: Reservation):
        self._limiter = limiter
        self.reservation = res

    @property
    def id(self) -> Optional[int]:
        return self.reservation.id

    @property
    def result(self) -> Result:
        return self.reservation.result

    @property
    def allowed(self) -> bool:
        return self.reservation.allowed

    @property
    def state(self) -> str:
        return self.reservation.state

    async def commit(self, *, now_ms: Optional[int] = None) -> None:
        await self._limiter._run(self.reservation.commit, now_ms=now_ms)

    async def cancel(self, *, now_ms: Optional[int] = None) -> None:
        await self._limiter._run(self.reservation.cancel, now_ms=now_ms)

    async def __aenter__(self) -> "AsyncReservation":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self._limiter._run(self.reservation.__exit__, exc_type, exc, tb)


class _ReserveCall:
    """What AsyncLimiter.reserve() returns: awaitable (an AsyncReservation)
    and an async context manager (`async with limiter.reserve(...) as r`)."""

    def __init__(self, coro_fn: Callable[[], Awaitable[AsyncReservation]]):
        self._coro_fn = coro_fn
        self._res: Optional[AsyncReservation] = None

    def __await__(self) -> Generator[Any, None, AsyncReservation]:
        return self._coro_fn().__await__()

    async def __aenter__(self) -> AsyncReservation:
        self._res = await self._coro_fn()
        return self._res

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._res is not None
        await self._res.__aexit__(exc_type, exc, tb)


class AsyncLimiter:
    """A Limiter whose calls run in an executor thread and are awaited.

    AsyncLimiter(path, **options) opens the database in the calling thread
    (use `await rlstore.aio.open(path)` to open it in the executor too);
    AsyncLimiter(limiter=an_open_Limiter) wraps one.  Every method of
    Limiter is here as a coroutine with the same arguments."""

    def __init__(self, path: Any = None, *, limiter: Optional[Limiter] = None,
                 executor: Optional[concurrent.futures.Executor] = None,
                 **options: Any) -> None:
        if limiter is None:
            limiter = Limiter(path, **options)
        self.limiter = limiter
        self._executor = executor
        self._own: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._pid = os.getpid()

    def _pool(self) -> concurrent.futures.Executor:
        if self._executor is not None:
            return self._executor
        if self._own is None or self._pid != os.getpid():
            # a child of fork() has the parent's executor without its thread
            self._own = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="rlstore")
            self._pid = os.getpid()
        return self._own

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), functools.partial(fn, *args, **kwargs))

    async def close(self) -> None:
        await self._run(self.limiter.close)
        if self._own is not None:
            self._own.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncLimiter":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- checks ---------------------------------------------------------------
    async def check(self, action: str, key: Key, cost: int = 1, *,
                    now_ms: Optional[int] = None) -> Result:
        return await self._run(self.limiter.check, action, key, cost, now_ms=now_ms)

    async def peek(self, action: str, key: Key, cost: int = 1, *,
                   now_ms: Optional[int] = None) -> Result:
        return await self._run(self.limiter.peek, action, key, cost, now_ms=now_ms)

    async def check_many(self, items: Any, *, now_ms: Optional[int] = None) -> List[Result]:
        return await self._run(self.limiter.check_many, list(items), now_ms=now_ms)

    async def refund(self, action: str, key: Key, cost: int = 1, *,
                     now_ms: Optional[int] = None) -> int:
        return await self._run(self.limiter.refund, action, key, cost, now_ms=now_ms)

    def reserve(self, action: str, key: Key, cost: int = 1, **kw: Any) -> _ReserveCall:
        async def go() -> AsyncReservation:
            res = await self._run(self.limiter.reserve, action, key, cost, **kw)
            return AsyncReservation(self, res)
        return _ReserveCall(go)

    async def commit(self, reservation: Any, *, now_ms: Optional[int] = None) -> None:
        if isinstance(reservation, AsyncReservation):
            reservation = reservation.reservation
        await self._run(self.limiter.commit, reservation, now_ms=now_ms)

    async def cancel(self, reservation: Any, *, now_ms: Optional[int] = None) -> None:
        if isinstance(reservation, AsyncReservation):
            reservation = reservation.reservation
        await self._run(self.limiter.cancel, reservation, now_ms=now_ms)

    # -- admin: the Limiter's, run in the executor ----------------------------
    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name.startswith("_") or name not in _ADMIN:
            raise AttributeError(name)
        fn = getattr(self.limiter, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(fn, *args, **kwargs)
        call.__name__ = name
        call.__doc__ = fn.__doc__
        return call

    # (typed stubs of the commonest admin calls; the rest via __getattr__)
    async def rules_apply(self, yaml: Any, **kw: Any) -> int:
        return await self._run(self.limiter.rules_apply, yaml, **kw)

    async def explain(self, action: str, key: Key, **kw: Any) -> Explanation:
        return await self._run(self.limiter.explain, action, key, **kw)

    async def usage(self, **kw: Any) -> List[Row]:
        return await self._run(self.limiter.usage, **kw)

    async def stats(self, seconds: int = 60, **kw: Any) -> Stats:
        return await self._run(self.limiter.stats, seconds, **kw)

    async def rules_describe(self, version: int = 0) -> RulesDescription:
        return await self._run(self.limiter.rules_describe, version)


_ADMIN = frozenset((
    "rules_dry_run", "rules_versions", "rules_get", "rules_rollback", "rules_limits",
    "rules_edit_limit", "rules_set_limit", "block", "unblock", "blocks", "tier_set",
    "tier_unset", "tiers", "override_set", "override_unset", "overrides", "reset",
    "usage_count", "audit", "doctor", "gc"))


async def open(path: Any, *, executor: Optional[concurrent.futures.Executor] = None,
               **options: Any) -> AsyncLimiter:
    """Opens the database in an executor thread (opening may wait for a
    migration's lock) and returns an AsyncLimiter over it."""
    loop = asyncio.get_running_loop()
    lim = await loop.run_in_executor(executor, functools.partial(Limiter, path, **options))
    return AsyncLimiter(limiter=lim, executor=executor)
