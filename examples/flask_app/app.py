"""A small Flask app limited by rlstore (examples/flask_app).

    pip install ./bindings/python          # once; apt-get install python3-flask
    RLSTORE_LIB=build/librlstore.so.0 python3 examples/flask_app/app.py
    curl -X POST -d email=ann@example.com http://127.0.0.1:5000/signup

Environment: RLSTORE_DB (default limits.db here), HOST (127.0.0.1), PORT
(5000; 0 picks a free one), PROXY_HEADER (e.g. X-Forwarded-For, when
behind nginx on this host).  It prints "listening on http://HOST:PORT"
when it accepts connections.

  POST /signup    3 a day per address, counted only when the account was
                  really created (a reservation: an exception refunds it)
  POST /login     5 a minute per address, then blocked 10 minutes
  GET  /api/items 10 a second per X-Api-Key header (bursts of 20)
  GET  /admin/usage  who is near their limits (the admin API)
"""

import os
import sys

import flask
from werkzeug.serving import make_server

import rlstore
from rlstore.flask import limit, remote_address

HERE = os.path.dirname(os.path.abspath(__file__))
DB = os.environ.get("RLSTORE_DB", os.path.join(HERE, "limits.db"))
PROXY = os.environ.get("PROXY_HEADER") or None

limiter = rlstore.Limiter(DB, tool="flask_app")
if not limiter.rules_versions():            # a new database: our rules
    with open(os.path.join(HERE, "rules.yaml"), encoding="utf-8") as f:
        limiter.rules_apply(f.read(), name="rules.yaml", comment="flask_app first start")

app = flask.Flask(__name__)
accounts = set()


def refused(request, result):
    """on_breach: log it, and answer in JSON (the headers are added)."""
    app.logger.warning("rate limited %s on %s (%s)", request.remote_addr, request.path,
                       result.reason)
    return flask.jsonify(error="too many requests", retry_after=result.retry_after), 429, \
        result.headers()


@app.post("/signup")
def signup():
    ip = remote_address(proxy_header=PROXY)
    email = flask.request.form.get("email", "")
    # Count the sign-up only if the account is created: the reservation
    # commits at the end of the block and is cancelled by an exception.
    with limiter.reserve("signup", ip) as res:
        if not res.allowed:
            return refused(flask.request, res.result)
        if "@" not in email or email in accounts:
            res.cancel()                    # not an account: not counted
            return flask.jsonify(error="invalid or taken email"), 400
        accounts.add(email)
    return flask.jsonify(created=email, left_today=res.result.remaining), 201


@app.post("/login")
@limit(limiter, "login", proxy_header=PROXY, on_breach=refused)
def login():
    return flask.jsonify(ok=flask.request.form.get("password") == "secret")


@app.get("/api/items")
@limit(limiter, "api", key=lambda request: request.headers.get("X-Api-Key"))
def items():
    # no X-Api-Key: the key callable returns None and the call is not limited
    return flask.jsonify(items=["a", "b", "c"])


@app.get("/admin/usage")
def usage():
    return flask.jsonify(limiter.usage(limit=20))


def main():
    host = os.environ.get("HOST", "127.0.0.1")
    server = make_server(host, int(os.environ.get("PORT", "5000")), app, threaded=True)
    print("listening on http://%s:%d" % (host, server.server_port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
