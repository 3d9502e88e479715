#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mc-hold-conns.py HOST:PORT N SECONDS [--from IP] [--slow-http]

Opens N TCP connections to HOST:PORT (bound to --from, a 127.0.0.0/8
address, when given) and keeps them open for SECONDS, then closes them.
--slow-http: each connection sends the start of an HTTP request and then
one more header byte every second, as a slow ("slowloris") client does,
so an idle timeout alone does not close it.  Prints "open K" once the
connections are up (K <= N: refused ones are not retried) and exits 0.
Bounded: at most 1024 connections and 120 seconds.
"""
import socket
import sys
import time


def main():
    args = sys.argv[1:]
    src = None
    slow = False
    if "--from" in args:
        i = args.index("--from")
        src = args[i + 1]
        del args[i:i + 2]
    if "--slow-http" in args:
        args.remove("--slow-http")
        slow = True
    host, port = args[0].rsplit(":", 1)
    n = min(int(args[1]), 1024)
    secs = min(float(args[2]), 120.0)
    conns = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            if src:
                s.bind((src, 0))
            s.connect((host, int(port)))
            if slow:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            conns.append(s)
        except OSError:
            s.close()
    print("open %d" % len(conns), flush=True)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        if slow:
            for s in list(conns):
                try:
                    s.send(b"a")
                except OSError:
                    conns.remove(s)
                    s.close()
    for s in conns:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
