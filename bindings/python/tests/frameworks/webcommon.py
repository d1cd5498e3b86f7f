"""What the framework suites share: a database with rules for them."""

import os
import tempfile

import rlstore

RULES = """\
version: 1
actions:
  login:
    key: ip
    limits:
      - { name: per_ip, algorithm: fixed_window, limit: 2, window: 1h, anchor: first_hit }
  api:
    limits:
      - { name: calls, algorithm: fixed_window, limit: 3, window: 1d, anchor: first_hit }
  safe:
    on_error: allow
    limits:
      - { name: calls, algorithm: fixed_window, limit: 3, window: 1d, anchor: first_hit }
"""
RATE_HEADERS = ("RateLimit", "RateLimit-Policy")


class Database:
    """A fresh database with RULES, in a temporary directory."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "limits.db")
        self.limiter = rlstore.Limiter(self.path)
        self.limiter.rules_apply(RULES, name="web.yaml")

    def read_only(self, on_error="deny"):
        """A handle that cannot charge: every check is decided by the
        failure policy (EREADONLY)."""
        return rlstore.Limiter(self.path, read_only=True, on_error=on_error)

    def close(self):
        self.limiter.close()
        self.dir.cleanup()
