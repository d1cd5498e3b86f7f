#!/usr/bin/env python3
"""tests/auth/upstream.py PORTFILE - the test application behind nginx.

Serves every method on 127.0.0.1 at a free port, written to PORTFILE once
it listens (the event the suite waits for), answers 200 "app PATH" and
prints one line "hit PATH" per request to stdout, so the suite can count
the requests that nginx let through.
"""
import http.server
import os
import sys


class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = ("app %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        print("hit %s" % self.path, flush=True)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = answer

    def log_message(self, *args):
        pass


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), App)
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
