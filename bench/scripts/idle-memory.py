#!/usr/bin/env python3
"""Memory of idle connections: starts a server binary, opens N connections that send the
HTTP/2 preface and an empty SETTINGS frame (or, with --http1, nothing at all), and prints the
server's RSS before, with them all open, and after they are closed.

    bench/scripts/idle-memory.py target/release/examples/quick_start 10000

The server must print nothing it needs answered and listen on PORT (the quick start does).
"""
import argparse
import os
import socket
import subprocess
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not listen")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("connections", type=int)
    parser.add_argument("--http1", action="store_true")
    parser.add_argument("--bursts", type=int, default=2)
    args = parser.parse_args()
    port = free_port()
    env = dict(os.environ, PORT=str(port))
    server = subprocess.Popen([args.server], env=env, stdout=subprocess.DEVNULL)
    try:
        wait_listening(port)
        time.sleep(0.5)
        before = rss_kib(server.pid)
        kind = "HTTP/1 silent" if args.http1 else "HTTP/2 idle"
        for burst in range(1, args.bursts + 1):
            sockets = []
            started = time.monotonic()
            for _ in range(args.connections):
                s = socket.create_connection(("127.0.0.1", port))
                if not args.http1:
                    s.sendall(PREFACE)
                sockets.append(s)
            time.sleep(1.0)
            opened = time.monotonic() - started
            peak = rss_kib(server.pid)
            for s in sockets:
                s.close()
            time.sleep(3.0)
            after = rss_kib(server.pid)
            descriptors = len(os.listdir(f"/proc/{server.pid}/fd"))
            per = (peak - before) / max(args.connections, 1)
            print(
                f"burst {burst}: {args.connections} {kind} connections (opened in {opened:.1f} s):"
                f" RSS {before} KiB before, {peak} KiB open ({per:.1f} KiB each),"
                f" {after} KiB 3 s after closing ({descriptors} descriptors open)"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
