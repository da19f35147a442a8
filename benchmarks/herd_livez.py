"""A health poller beside the herd, in a process of its own so the load generator's event loop
does not delay it: GET HOST:PORT/PATH on a fresh connection every 100 ms, as a load
balancer's check would, one line per poll appended to OUT: `<epoch start> <seconds> <status>`
(status is the HTTP status, or the error's name). Runs until terminated.

    .venv/bin/python -m benchmarks.herd_livez HOST PORT PATH OUT
"""

from __future__ import annotations

import socket
import sys
import time

EVERY = 0.1
TIMEOUT = 5.0


def poll(host: str, port: int, path: str) -> str:
    with socket.create_connection((host, port), timeout=TIMEOUT) as conn:
        conn.settimeout(TIMEOUT)
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionResetError("closed before the headers")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return head.split(b" ", 2)[1].decode()


def main(host: str, port: int, path: str, out: str) -> None:
    next_at = time.monotonic()
    with open(out, "a") as samples:
        while True:
            began, started = time.time(), time.perf_counter()
            try:
                status = poll(host, port, path)
            except OSError as error:
                status = type(error).__name__
            samples.write(f"{began:.3f} {time.perf_counter() - started:.6f} {status}\n")
            samples.flush()
            next_at = max(next_at + EVERY, time.monotonic())
            time.sleep(max(0.0, next_at - time.monotonic()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
