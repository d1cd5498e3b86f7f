"""rlstore.django (decorator and middleware) with the real Django
(Debian's python3-django), through Django's own test client."""

import logging
import os
import unittest

import django
from django.conf import settings

from webcommon import RATE_HEADERS, Database

DB = Database()
BREACHES = []


def on_breach(request, result):
    BREACHES.append((request.path, result.rule))
    if request.path == "/custom":
        from django.http import JsonResponse
        return JsonResponse({"slow_down": True}, status=429)
    return None


settings.configure(
    DEBUG=False, ALLOWED_HOSTS=["testserver"], ROOT_URLCONF=__name__, SECRET_KEY="t",
    MIDDLEWARE=[], INSTALLED_APPS=[], USE_TZ=True,
    LOGGING_CONFIG=None,
    RLSTORE={"DATABASE": DB.path, "ACTION": "api", "PROXY_HEADER": "X-Forwarded-For",
             "ON_BREACH": on_breach})
django.setup()
logging.getLogger("django.request").setLevel(logging.CRITICAL)   # the 429s and 400s

from django.http import HttpResponse  # noqa: E402 - after settings
from django.test import Client, RequestFactory, SimpleTestCase, override_settings  # noqa
from django.urls import path  # noqa: E402

import rlstore  # noqa: E402
from rlstore.django import ratelimit  # noqa: E402


@ratelimit("login", proxy_header="X-Forwarded-For", on_breach=on_breach)
def login(request):
    return HttpResponse("welcome")


@ratelimit("login", on_breach=on_breach)
def custom(request):
    return HttpResponse("ok")


@ratelimit("api", key=lambda request: request.GET.get("user"))
def items(request):
    return HttpResponse("items")


def plain(request):
    return HttpResponse("plain")


urlpatterns = [path("login", login), path("custom", custom), path("items", items),
               path("plain", plain)]


def tearDownModule():
    DB.close()


class TestDecorator(SimpleTestCase):
    def setUp(self):
        for r in DB.limiter.usage(limit=1000):
            DB.limiter.reset(r["action"], r["key"])
        BREACHES.clear()
        self.c = Client()

    def test_limit_429_headers(self):
        got = [self.c.post("/login", REMOTE_ADDR="203.0.113.5") for _ in range(3)]
        self.assertEqual([r.status_code for r in got], [200, 200, 429])
        for h in RATE_HEADERS:
            self.assertIn(h, got[0])
        self.assertEqual(got[0]["RateLimit-Policy"], '"per_ip";q=2;w=3600')
        self.assertEqual(got[2].content, b"rate limit exceeded\n")
        self.assertTrue(1 <= int(got[2]["Retry-After"]) <= 3600)
        self.assertEqual(BREACHES, [("/login", "per_ip")])

    def test_proxy_header(self):
        xff = {"HTTP_X_FORWARDED_FOR": "198.51.100.4"}
        codes = [self.c.post("/login", REMOTE_ADDR="127.0.0.1", **xff).status_code
                 for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429])
        # not from a trusted proxy: the header is ignored, the peer counts
        self.assertEqual(self.c.post("/login", REMOTE_ADDR="203.0.113.50", **xff).status_code,
                         200)
        r = self.c.post("/login", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="1.1.1.1, x")
        self.assertEqual((r.status_code, r.content),
                         (400, b"malformed address in proxy header: 'x'\n"))

    def test_on_breach_response_and_key_callable(self):
        codes = [self.c.get("/custom", REMOTE_ADDR="192.0.2.9").status_code for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429])
        self.assertEqual(self.c.get("/custom", REMOTE_ADDR="192.0.2.9").json(),
                         {"slow_down": True})
        codes = [self.c.get("/items?user=ann").status_code for _ in range(4)]
        self.assertEqual(codes, [200, 200, 200, 429])
        r = self.c.get("/items")       # no user: not limited
        self.assertEqual((r.status_code, r.has_header("RateLimit")), (200, False))


@override_settings(MIDDLEWARE=["rlstore.django.RateLimitMiddleware"])
class TestMiddleware(SimpleTestCase):
    def setUp(self):
        for r in DB.limiter.usage(limit=1000):
            DB.limiter.reset(r["action"], r["key"])
        BREACHES.clear()

    def test_every_request(self):
        c = Client()
        codes = [c.get("/plain", REMOTE_ADDR="192.0.2.1").status_code for _ in range(4)]
        self.assertEqual(codes, [200, 200, 200, 429])
        self.assertEqual(BREACHES, [("/plain", "calls")])
        r = c.get("/plain", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="192.0.2.2")
        self.assertEqual((r.status_code, r["RateLimit-Policy"]), (200, '"calls";q=3;w=86400'))
        self.assertEqual(c.get("/plain", REMOTE_ADDR="127.0.0.1",
                               HTTP_X_FORWARDED_FOR="::1, nope").status_code, 400)

    def test_needs_an_action(self):
        from django.core.exceptions import ImproperlyConfigured
        from rlstore.django import RateLimitMiddleware
        with override_settings(RLSTORE={"DATABASE": DB.path}):
            with self.assertRaises(ImproperlyConfigured):
                RateLimitMiddleware(lambda r: None)

    def test_missing_database_is_named(self):
        from rlstore.django import RateLimitMiddleware
        missing = os.path.join(DB.dir.name, "no", "such.db")
        with override_settings(RLSTORE={"DATABASE": missing, "ACTION": "api"}):
            mw = RateLimitMiddleware(lambda r: HttpResponse("x"))
            with self.assertRaises(rlstore.CannotOpen):
                mw(RequestFactory().get("/plain"))


if __name__ == "__main__":
    unittest.main()
