"""rlstore.flask and rlstore.wsgi with the real Flask (Debian's
python3-flask), and the example app examples/flask_app run as a real
server."""

import http.client
import json
import os
import subprocess
import sys
import unittest
import urllib.parse

import flask

import rlstore
from rlstore.flask import limit, remote_address
from rlstore.wsgi import RateLimitMiddleware
from webcommon import RATE_HEADERS, Database

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


def make_app(db, limiter=None, **opts):
    limiter = limiter or db.limiter
    app = flask.Flask("t")
    breaches = []

    def on_breach(request, result):
        breaches.append((request.path, result.rule))
        if request.path == "/custom":
            return flask.jsonify(slow_down=True), 429, result.headers()
        return None

    @app.route("/login", methods=["POST"])
    @limit(limiter, "login", on_breach=on_breach, **opts)
    def login():
        return "welcome"

    @app.route("/custom")
    @limit(limiter, "login", on_breach=on_breach, **opts)
    def custom():
        return "ok"

    @app.route("/api")
    @limit(limiter, "api", key=lambda request: request.headers.get("X-Api-Key"))
    def api():
        return flask.jsonify(items=[1])

    @app.route("/safe")
    @limit(limiter, "safe", key=lambda request: "k")
    def safe():
        return "safe"

    @app.route("/whoami")
    def whoami():
        return remote_address(proxy_header="X-Forwarded-For")
    app.breaches = breaches
    return app


class TestFlaskDecorator(unittest.TestCase):
    def setUp(self):
        self.db = Database()
        self.app = make_app(self.db, proxy_header="X-Forwarded-For")
        self.client = self.app.test_client()

    def tearDown(self):
        self.db.close()

    def post(self, peer="203.0.113.5", **headers):
        return self.client.post("/login", environ_base={"REMOTE_ADDR": peer}, headers=headers)

    def test_limit_429_headers(self):
        got = [self.post() for _ in range(3)]
        self.assertEqual([r.status_code for r in got], [200, 200, 429])
        self.assertEqual(got[0].get_data(), b"welcome")
        for h in RATE_HEADERS:
            self.assertIn(h, got[0].headers)
        self.assertEqual(got[0].headers["RateLimit-Policy"], '"per_ip";q=2;w=3600')
        denied = got[2]
        self.assertEqual(denied.get_data(), b"rate limit exceeded\n")
        self.assertTrue(denied.headers["RateLimit"].startswith('"per_ip";r=0;t='))
        self.assertTrue(1 <= int(denied.headers["Retry-After"]) <= 3600)
        self.assertEqual(self.app.breaches, [("/login", "per_ip")])
        self.assertEqual(self.post("203.0.113.6").status_code, 200)   # another address

    def test_on_breach_response(self):
        got = [self.client.get("/custom", environ_base={"REMOTE_ADDR": "192.0.2.1"})
               for _ in range(3)]
        self.assertEqual([r.status_code for r in got], [200, 200, 429])
        self.assertEqual(got[2].get_json(), {"slow_down": True})
        self.assertIn("Retry-After", got[2].headers)

    def test_trusted_proxy_header(self):
        # behind the local proxy: the forwarded address is the key
        for _ in range(2):
            self.assertEqual(self.post("127.0.0.1", **{"X-Forwarded-For": "198.51.100.1"})
                             .status_code, 200)
        self.assertEqual(self.post("127.0.0.1", **{"X-Forwarded-For": "198.51.100.1"})
                         .status_code, 429)
        self.assertEqual(self.post("127.0.0.1", **{"X-Forwarded-For": "198.51.100.2"})
                         .status_code, 200)
        # a client sending the header itself is not believed: keyed by its peer
        for _ in range(2):
            self.post("203.0.113.9", **{"X-Forwarded-For": "198.51.100.3"})
        self.assertEqual(self.post("127.0.0.1", **{"X-Forwarded-For": "198.51.100.3"})
                         .status_code, 200)
        self.assertEqual(self.post("203.0.113.9", **{"X-Forwarded-For": "10.9.9.9"})
                         .status_code, 429)
        r = self.client.get("/whoami", environ_base={"REMOTE_ADDR": "127.0.0.1"},
                            headers={"X-Forwarded-For": "2001:DB8::7"})
        self.assertEqual(r.get_data(), b"2001:db8::7")

    def test_malformed_input_is_400(self):
        r = self.post("127.0.0.1", **{"X-Forwarded-For": "evil"})
        self.assertEqual((r.status_code, r.get_data()),
                         (400, b"malformed address in proxy header: 'evil'\n"))
        # a peer that is no address for an ip action: the library's EKEY
        r = self.post("not-an-address")
        self.assertEqual(r.status_code, 400)
        self.assertTrue(r.get_data().startswith(b"invalid rate-limit key: "))
        r = self.client.get("/whoami", environ_base={"REMOTE_ADDR": "127.0.0.1"},
                            headers={"X-Forwarded-For": "1.2.3.4, bad"})
        self.assertEqual(r.status_code, 400)

    def test_key_callable(self):
        codes = [self.client.get("/api", headers={"X-Api-Key": "k1"}).status_code
                 for _ in range(4)]
        self.assertEqual(codes, [200, 200, 200, 429])
        self.assertEqual(self.client.get("/api", headers={"X-Api-Key": "k2"}).status_code, 200)
        # no key: not limited, no headers
        r = self.client.get("/api")
        self.assertEqual(r.status_code, 200)
        self.assertNotIn("RateLimit", r.headers)
        self.assertEqual(self.db.limiter.usage_count(action="api"), 2)

    def test_failure_policy(self):
        ro = self.db.read_only("deny")
        try:
            client = make_app(self.db, limiter=ro).test_client()
            with self.assertLogs("rlstore", "WARNING") as logs:
                r = client.post("/login", environ_base={"REMOTE_ADDR": "203.0.113.5"})
                self.assertEqual((r.status_code, r.get_data()),
                                 (503, b"rate limiter unavailable\n"))
                r = client.get("/safe")   # on_error: allow
                self.assertEqual((r.status_code, r.get_data()), (200, b"safe"))
            self.assertIn("EREADONLY", logs.output[0])
        finally:
            ro.close()

    def test_unknown_action_is_a_500(self):
        app = flask.Flask("bad")

        @app.route("/")
        @limit(self.db.limiter, "nosuchaction", key=lambda request: "k")
        def index():
            return "never"
        with self.assertLogs(app.logger, "ERROR") as logs:
            self.assertEqual(app.test_client().get("/").status_code, 500)
        self.assertIn("UnknownAction: ENOACTION", "\n".join(logs.output))

    def test_path_opened_once_lazily(self):
        app = flask.Flask("lazy")

        @app.route("/")
        @limit(self.db.path, "api", key=lambda request: "lazy")
        def index():
            return "x"

        @app.route("/other")
        @limit(self.db.path, "api", key=lambda request: "other")
        def other():
            return "y"
        c = app.test_client()
        self.assertEqual([c.get("/").status_code for _ in range(4)], [200, 200, 200, 429])
        self.assertEqual(c.get("/other").status_code, 200)
        guard = index.rlstore_guard
        self.assertIsInstance(guard.limiter, rlstore.Limiter)
        # one Limiter per path and process, whichever view opened it
        self.assertIs(other.rlstore_guard.limiter, guard.limiter)
        guard.limiter.close()


class TestWsgiMiddlewareOnFlask(unittest.TestCase):
    def test_every_request(self):
        db = Database()
        try:
            app = flask.Flask("mw")

            @app.route("/<path:p>")
            def anything(p):
                return p
            app.wsgi_app = RateLimitMiddleware(app.wsgi_app, db.limiter, "api")
            c = app.test_client()
            codes = [c.get("/a%d" % i, environ_base={"REMOTE_ADDR": "192.0.2.7"}).status_code
                     for i in range(4)]
            self.assertEqual(codes, [200, 200, 200, 429])
            r = c.get("/x", environ_base={"REMOTE_ADDR": "192.0.2.8"})
            self.assertEqual(r.headers["RateLimit-Policy"], '"calls";q=3;w=86400')
        finally:
            db.close()


class TestExampleApp(unittest.TestCase):
    """examples/flask_app/app.py, run as its README says, over real HTTP."""

    def setUp(self):
        self.db = Database()
        self.db.limiter.close()
        os.unlink(self.db.path)   # the app makes its own database
        env = dict(os.environ, PORT="0", RLSTORE_DB=self.db.path, PYTHONUNBUFFERED="1")
        self.log = open(os.path.join(self.db.dir.name, "app.log"), "w+b")
        self.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples",
                                                                   "flask_app", "app.py")],
                                     env=env, stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()   # waits for the app to listen
        if not line.startswith("listening on http://127.0.0.1:"):
            self.proc.kill()
            self.proc.wait()
            self.log.seek(0)
            raise AssertionError("the app did not start: %r %r"
                                 % (line, self.log.read().decode()[-800:]))
        self.port = int(line.rsplit(":", 1)[1])

    def tearDown(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        self.db.limiter = rlstore.Limiter(self.db.path)
        self.db.close()

    def request(self, method, path, form=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port)
        body = urllib.parse.urlencode(form) if form is not None else None
        hdrs = dict(headers or {})
        if body is not None:
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        c.request(method, path, body=body, headers=hdrs)
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def test_signup_counts_only_created_accounts(self):
        # a failed sign-up (bad email) is refunded: 3 real ones still pass
        self.assertEqual(self.request("POST", "/signup", {"email": "nope"})[0], 400)
        got = [self.request("POST", "/signup", {"email": "u%d@example.com" % i})
               for i in range(4)]
        self.assertEqual([g[0] for g in got], [201, 201, 201, 429])
        self.assertEqual(json.loads(got[2][2])["left_today"], 0)
        self.assertEqual(json.loads(got[3][2])["error"], "too many requests")
        self.assertIn("Retry-After", got[3][1])

    def test_login_and_api(self):
        codes = [self.request("POST", "/login", {"password": "x"})[0] for _ in range(6)]
        self.assertEqual(codes, [200] * 5 + [429])
        st, h, body = self.request("POST", "/login", {"password": "secret"})
        self.assertEqual(st, 429)   # blocked for 10 minutes: block_for
        self.assertGreater(int(h["Retry-After"]), 500)
        # The API key is the key: blocking key "a" (the admin API, on the
        # app's database) refuses "a" only.  (Its gcra rate refills with
        # the real clock, so its count is not what this test looks at.)
        self.assertEqual(self.request("GET", "/api/items", headers={"X-Api-Key": "a"})[0], 200)
        with rlstore.Limiter(self.db.path) as admin:
            admin.block("a", "api", reason="test")
        st, h, _ = self.request("GET", "/api/items", headers={"X-Api-Key": "a"})
        self.assertEqual((st, h.get("RateLimit-Policy")), (429, '"api";q=0'))
        self.assertEqual(self.request("GET", "/api/items", headers={"X-Api-Key": "b"})[0], 200)
        self.assertEqual(self.request("GET", "/api/items")[0], 200)   # no key: not limited
        st, _, body = self.request("GET", "/admin/usage")
        rows = {(r["action"], r["key"]) for r in json.loads(body)}
        self.assertIn(("login", "127.0.0.1"), rows)


if __name__ == "__main__":
    unittest.main()
