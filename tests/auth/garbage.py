#!/usr/bin/env python3
"""tests/auth/garbage.py PORT - sends what no proxy sends to 127.0.0.1:PORT,
each on its own connection, and prints one line per case: its name and the
status line of the answer ("closed" when the connection ended without
one).  The suite then checks that the service still answers."""
import socket
import sys

CASES = [
    ("binary", b"\x00\xff\xfe garbage \x01\r\n\r\n"),
    ("no version", b"GET /check/api\r\n\r\n"),
    ("HTTP/9.9", b"GET /check/api HTTP/9.9\r\nHost: x\r\n\r\n"),
    ("header without colon", b"GET /check/api HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"),
    ("control bytes in X-Forwarded-For",
     b"GET /check/api HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 1.2.3.4\x01\x02\r\n\r\n"),
    ("bare LF line ends", b"GET /check/api HTTP/1.1\nHost: x\n\n"),
    ("request line of 100 KiB", b"GET /check/" + b"a" * 102400 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("body length lies", b"POST /check/api HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\nab"),
    ("chunked garbage", b"POST /check/api HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
    ("half a request, then close", b"GET /check/api HTTP/1.1\r\nHo"),
]


def main():
    port = int(sys.argv[1])
    for name, data in CASES:
        # a connection the service keeps open is given up after 3 s
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        try:
            s.sendall(data)
            if name.startswith("half") or name == "binary":
                s.shutdown(socket.SHUT_WR)
            got = b""
            while b"\r\n" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            line = got.split(b"\r\n", 1)[0].decode("latin-1") if b"\r\n" in got else "closed"
        except OSError as e:
            line = "closed (%s)" % e.__class__.__name__
        finally:
            s.close()
        print("%s: %s" % (name, line))


if __name__ == "__main__":
    main()
