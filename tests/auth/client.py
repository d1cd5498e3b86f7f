#!/usr/bin/env python3
"""tests/auth/client.py URL COUNT [--source IP] [--progress FILE]
                         [--pause N:FILE]... [-H 'N: v']...

Sends COUNT GET requests to URL one after the other, each on a new
connection from the source address IP (default 127.0.0.1; any 127.x.y.z is
this host, and a distinct client address for nginx), and prints what came
back: one line "STATUS N" per status, then "429-headers N", the 429 answers
that carried RateLimit, RateLimit-Policy and Retry-After.  With --progress
it writes the number of answers so far to FILE after each one (the suite
waits on it to act in the middle of the traffic); with --pause N:FILE it
waits after N answers until FILE exists (at most 60 s), so that the suite
can say when the traffic goes on.  A connection error is printed as status
"error".
"""
import argparse
import collections
import http.client
import os
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("count", type=int)
    ap.add_argument("--source", default="127.0.0.1")
    ap.add_argument("--progress")
    ap.add_argument("--pause", action="append", default=[])
    ap.add_argument("-H", action="append", default=[])
    a = ap.parse_args()
    pauses = dict((int(p.split(":", 1)[0]), p.split(":", 1)[1]) for p in a.pause)
    u = urllib.parse.urlsplit(a.url)
    headers = dict(h.split(": ", 1) for h in a.H)
    seen = collections.Counter()
    with_headers = 0
    for i in range(a.count):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30,
                                       source_address=(a.source, 0))
        try:
            c.request("GET", u.path or "/", headers=headers)
            r = c.getresponse()
            r.read()
            seen[str(r.status)] += 1
            if r.status == 429 and all(r.getheader(h) for h in
                                       ("RateLimit", "RateLimit-Policy", "Retry-After")):
                with_headers += 1
        except OSError:
            seen["error"] += 1
        finally:
            c.close()
        if a.progress:
            with open(a.progress + ".tmp", "w") as f:
                f.write("%d\n" % (i + 1))
            os.rename(a.progress + ".tmp", a.progress)
        if i + 1 in pauses:
            end = time.monotonic() + 60
            while not os.path.exists(pauses[i + 1]) and time.monotonic() < end:
                time.sleep(0.01)
    for status in sorted(seen):
        print(status, seen[status])
    print("429-headers", with_headers)


if __name__ == "__main__":
    main()
