"""What `mypy --strict` must refuse: retry_after may be None (never)."""

import rlstore


def seconds(limiter: rlstore.Limiter) -> float:
    wait: float = limiter.check("signup", "203.0.113.7").retry_after
    return wait
