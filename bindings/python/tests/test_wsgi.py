"""rlstore.wsgi.RateLimitMiddleware behind the standard library's real WSGI
server (wsgiref), over real HTTP, and the client-address rules."""

import http.client
import os
import tempfile
import threading
import unittest
import wsgiref.simple_server

import rlstore
from rlstore import web
from rlstore.wsgi import RateLimitMiddleware

RULES = """\
version: 1
actions:
  login:
    key: ip
    limits:
      - { name: per_ip, algorithm: fixed_window, limit: 2, window: 1h, anchor: first_hit }
"""


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello\n"]


class Quiet(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *a):
        pass


class TestClientAddress(unittest.TestCase):
    T = [web.ipaddress.ip_network(n) for n in ("127.0.0.0/8", "10.0.0.0/8")]

    def test_peer_only_without_a_trusted_proxy(self):
        ca = web.client_address
        self.assertEqual(ca("203.0.113.5", None, self.T), "203.0.113.5")
        # an untrusted peer's header is ignored
        self.assertEqual(ca("203.0.113.5", "1.2.3.4", self.T), "203.0.113.5")

    def test_read_from_the_right_skipping_trusted(self):
        ca = web.client_address
        self.assertEqual(ca("127.0.0.1", "198.51.100.7", self.T), "198.51.100.7")
        self.assertEqual(ca("127.0.0.1", "6.6.6.6, 198.51.100.7, 10.1.2.3", self.T),
                         "198.51.100.7")
        # what a client wrote further left is never read, even if junk
        self.assertEqual(ca("127.0.0.1", "junk, 198.51.100.7", self.T), "198.51.100.7")
        # all trusted: the leftmost
        self.assertEqual(ca("127.0.0.1", "10.0.0.9, 10.0.0.8", self.T), "10.0.0.9")
        self.assertEqual(ca("::1", "2001:DB8::1", [web.ipaddress.ip_network("::1/128")]),
                         "2001:db8::1")
        # no peer: a Unix socket, only local processes (a proxy) reach it
        self.assertEqual(ca(None, "198.51.100.7", self.T), "198.51.100.7")
        self.assertEqual(ca("", None, self.T), "")

    def test_malformed(self):
        for hdr in ("not-an-ip", "", " , ", "1.2.3.4, 999.1.1.1", "1.2.3.4:80", "x" * 9000):
            with self.assertRaises(web.BadRequest, msg=hdr[:20]):
                web.client_address("127.0.0.1", hdr, self.T)

    def test_guard_arguments(self):
        for kw in ({"key": "ip"}, {"trusted_proxies": ["not a net"]}):
            with self.assertRaises(rlstore.InvalidArgument):
                web.Guard("x.db", "login", **kw)
        with self.assertRaises(rlstore.InvalidArgument):
            web.Guard("x.db", 42)


class TestWsgiServer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "w.db")
        with rlstore.Limiter(self.path) as lim:
            lim.rules_apply(RULES)
        self.breaches = []
        app = RateLimitMiddleware(hello, self.path, "login", proxy_header="X-Forwarded-For",
                                  on_breach=lambda env, r: self.breaches.append(r.rule))
        self.server = wsgiref.simple_server.make_server("127.0.0.1", 0, app,
                                                        handler_class=Quiet)
        self.thread = threading.Thread(target=self.server.serve_forever)
        self.thread.start()

    def tearDown(self):
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()
        self.dir.cleanup()

    def get(self, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.server.server_port)
        c.request("GET", "/", headers=headers or {})
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def test_limit_then_429(self):
        xff = {"X-Forwarded-For": "198.51.100.7"}
        got = [self.get(xff) for _ in range(3)]
        self.assertEqual([g[0] for g in got], [200, 200, 429])
        self.assertEqual(got[0][2], b"hello\n")
        self.assertEqual(got[0][1]["RateLimit-Policy"], '"per_ip";q=2;w=3600')
        self.assertTrue(got[1][1]["RateLimit"].startswith('"per_ip";r=0;t='))
        status, h, body = got[2]
        self.assertEqual(body, b"rate limit exceeded\n")
        self.assertTrue(1 <= int(h["Retry-After"]) <= 3600)
        self.assertIn("RateLimit", h)
        self.assertEqual(self.breaches, ["per_ip"])
        # another client behind the same proxy is counted apart
        self.assertEqual(self.get({"X-Forwarded-For": "198.51.100.8"})[0], 200)
        # the peer itself (no header) too
        self.assertEqual(self.get()[0], 200)

    def test_malformed_header_is_400(self):
        status, _, body = self.get({"X-Forwarded-For": "1.2.3.4, <script>"})
        self.assertEqual(status, 400)
        self.assertEqual(body, b"malformed address in proxy header: '<script>'\n")


if __name__ == "__main__":
    unittest.main()
