"""rlstore.asgi.RateLimitMiddleware with the real Starlette (Debian's
python3-starlette), through its TestClient (python3-httpx) and behind a
real uvicorn server (python3-uvicorn) over real HTTP."""

import asyncio
import http.client
import socket
import threading
import unittest

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import rlstore
import rlstore.aio
from rlstore.asgi import RateLimitMiddleware
from webcommon import RATE_HEADERS, Database


async def hello(request):
    return PlainTextResponse("hello")


def make_app(limiter, action="api", **opts):
    return Starlette(routes=[Route("/", hello), Route("/{p}", hello)],
                     middleware=[Middleware(RateLimitMiddleware, limiter=limiter,
                                            action=action, **opts)])


class TestStarlette(unittest.TestCase):
    def setUp(self):
        self.db = Database()

    def tearDown(self):
        self.db.close()

    def test_limit_429_headers_and_on_breach(self):
        breaches = []

        def on_breach(scope, result):
            breaches.append((scope["path"], result.rule))
            if scope["path"] == "/custom":
                return JSONResponse({"slow_down": True}, status_code=429,
                                    headers=result.headers())
            return None
        app = make_app(self.db.limiter, key=lambda scope: scope["path"], on_breach=on_breach)
        with TestClient(app) as c:
            got = [c.get("/a") for _ in range(4)]
            self.assertEqual([r.status_code for r in got], [200, 200, 200, 429])
            for h in RATE_HEADERS:
                self.assertIn(h, got[0].headers)
            self.assertEqual(got[0].text, "hello")
            self.assertEqual(got[3].text, "rate limit exceeded\n")
            self.assertTrue(1 <= int(got[3].headers["retry-after"]) <= 86400)
            custom = [c.get("/custom") for _ in range(4)]
            self.assertEqual(custom[3].json(), {"slow_down": True})
            self.assertIn("retry-after", custom[3].headers)
        self.assertEqual(breaches, [("/a", "calls"), ("/custom", "calls")])

    def test_action_callable_and_exempt(self):
        app = make_app(self.db.limiter,
                       action=lambda scope: None if scope["path"] == "/free" else "api")
        with TestClient(app) as c:
            self.assertEqual([c.get("/free").status_code for _ in range(5)], [200] * 5)
            self.assertNotIn("ratelimit", c.get("/free").headers)
            # the test client's peer is "testclient": keyed as it is
            self.assertEqual([c.get("/x").status_code for _ in range(4)], [200, 200, 200, 429])
        self.assertEqual([r["key"] for r in self.db.limiter.usage()], ["testclient"])

    def test_bad_key_and_failure_policy(self):
        with TestClient(make_app(self.db.limiter, action="login")) as c:
            r = c.get("/")        # "testclient" is not an address for an ip action
            self.assertEqual(r.status_code, 400)
            self.assertTrue(r.text.startswith("invalid rate-limit key: "))
        ro = self.db.read_only("deny")
        try:
            with TestClient(make_app(ro, key=lambda s: "k")) as c, \
                    self.assertLogs("rlstore", "WARNING"):
                self.assertEqual(c.get("/").status_code, 503)
            with TestClient(make_app(ro, action="safe", key=lambda s: "k")) as c, \
                    self.assertLogs("rlstore", "WARNING"):
                self.assertEqual(c.get("/").status_code, 200)
        finally:
            ro.close()

    def test_async_limiter_and_path(self):
        alim = rlstore.aio.AsyncLimiter(self.db.path)
        with TestClient(make_app(alim, key=lambda s: "k")) as c:
            self.assertEqual([c.get("/").status_code for _ in range(4)], [200, 200, 200, 429])
        with TestClient(make_app(self.db.path, key=lambda s: "k2")) as c:
            self.assertEqual([c.get("/").status_code for _ in range(4)], [200, 200, 200, 429])
        asyncio.run(alim.close())


class TestUvicorn(unittest.TestCase):
    """A real server: the peer is the real 127.0.0.1, a trusted proxy."""

    def setUp(self):
        import uvicorn
        self.db = Database()
        app = make_app(self.db.limiter, action="login", proxy_header="X-Forwarded-For")
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        started = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets=None):
                await super().startup(sockets=sockets)
                started.set()
        self.server = Server(uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off",
                                            log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        started.wait()

    def tearDown(self):
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()
        self.db.close()

    def get(self, xff=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port)
        c.request("GET", "/", headers={"X-Forwarded-For": xff} if xff else {})
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def test_proxy_header_over_http(self):
        got = [self.get("198.51.100.9") for _ in range(3)]
        self.assertEqual([g[0] for g in got], [200, 200, 429])
        self.assertEqual(got[0][1]["ratelimit-policy"], '"per_ip";q=2;w=3600')
        self.assertIn("retry-after", got[2][1])
        self.assertEqual(self.get("198.51.100.10")[0], 200)
        self.assertEqual(self.get()[0], 200)          # the proxy's own address
        self.assertEqual(self.get("::1, bogus")[0], 400)
        keys = {r["key"] for r in self.db.limiter.usage(action="login")}
        self.assertEqual(keys, {"198.51.100.9", "198.51.100.10", "127.0.0.1"})


if __name__ == "__main__":
    unittest.main()
