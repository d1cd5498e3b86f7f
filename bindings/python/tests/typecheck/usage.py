"""A typed program using the binding: `mypy --strict` must accept it against
the installed package (its py.typed), see tests/examples/test_python_web.sh."""

import asyncio
from typing import List, Optional, Tuple

import rlstore
import rlstore.aio
from rlstore.shorthand import rules_yaml


def decide(limiter: rlstore.Limiter, ip: str) -> Optional[float]:
    r: rlstore.Result = limiter.check("signup", ip)
    wait: Optional[float] = r.retry_after
    headers: List[Tuple[str, str]] = r.header_list("signups")
    assert headers is not None
    try:
        limiter.check("signup", ip, 2)
    except rlstore.InvalidKey as e:
        code: int = e.code
        name: str = e.name
        assert code and name
    except rlstore.StorageFailure:
        pass
    with limiter.reserve("signup", ip) as res:
        ident: Optional[int] = res.id
        assert ident is None or ident > 0
    versions: List[rlstore.Row] = limiter.rules_versions()
    assert versions is not None
    ex: rlstore.Explanation = limiter.explain("signup", ip)
    assert ex.limits is not None
    return wait


async def decide_async(path: str) -> bool:
    alim = await rlstore.aio.open(path)
    r = await alim.check("api", "k")
    async with alim.reserve("api", "k") as res:
        ok: bool = res.allowed
    await alim.close()
    return r.allowed and ok


def main() -> None:
    limiter = rlstore.Limiter("limits.db", on_error="allow")
    limiter.rules_apply(rules_yaml({"signup": "20/day"}, key="ip"))
    print(decide(limiter, "203.0.113.7"), asyncio.run(decide_async("limits.db")))
