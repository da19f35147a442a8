"""Many concurrent HTTP watch streams in one process, timing each event's arrival (a subprocess).

    .venv/bin/python -m benchmarks.watchers HOST PORT PATH COUNT [TOKEN]

Opens COUNT streaming GETs of PATH with asyncio and raw sockets (an HTTP client library would
cost more CPU than the server it measures, on the same two cores), prints `ready` once every
stream has its 200 headers, then reads commands from stdin: `until R` waits (≤ 60 s) until
every stream has seen resourceVersion R and prints one JSON line, {"receipts": {rv: [epoch
seconds, ...]}, "short": streams that never reached R, "errors": [...]}. Event lines are
newline-delimited JSON in chunked bodies, as kube-apiserver's watch (and the bare broadcast
baseline) send them; the arrival time is taken when a chunk's bytes are in, before parsing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict

import orjson

CONNECT_BATCH = 50  # daphne's listen backlog is small; a burst of 1,000 SYNs would retry


RV = b'"resourceVersion":"'


def _revision(line: bytes) -> int:
    """The event's resourceVersion, found rather than parsed: a full parse of every 4 KB line
    would make this client, not the server, the bottleneck. The object's metadata comes
    before its spec, so the first match is the right one."""
    start = line.index(RV) + len(RV)
    return int(line[start : line.index(b'"', start)])


class Stream:
    def __init__(self, host: str, port: int, path: str, token: str) -> None:
        self.host, self.port, self.path, self.token = host, port, path, token
        self.last = 0
        self.receipts: dict[int, list[float]] = defaultdict(list)
        self.error = ""
        self.changed = asyncio.Event()

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(self.host, self.port, limit=1 << 22)
        auth = f"Authorization: Bearer {self.token}\r\n" if self.token else ""
        writer.write(
            f"GET {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{auth}"
            "Accept: application/json\r\n\r\n".encode()
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        if status != b"200":
            raise RuntimeError(f"watch answered {status.decode()}: {head[:300]!r}")
        if b"transfer-encoding: chunked" not in head.lower():
            raise RuntimeError(f"watch is not chunked: {head[:300]!r}")
        return reader, writer

    async def read(self, reader: asyncio.StreamReader) -> None:
        pending = b""
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.error = self.error or "stream ended"
                return
            data = await reader.readexactly(size + 2)
            arrived = time.time()
            pending += data[:-2]
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not line:
                    continue
                if line.startswith(b'{"type":"ERROR"'):
                    self.error = line[:300].decode(errors="replace")
                    return
                revision = _revision(line)
                self.receipts[revision].append(arrived)
                self.last = max(self.last, revision)
                self.changed.set()


async def _open_all(
    streams: list[Stream],
) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    # The writers must stay referenced: a collected StreamWriter closes its connection.
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for start in range(0, len(streams), CONNECT_BATCH):
        batch = streams[start : start + CONNECT_BATCH]
        opened += await asyncio.gather(*(s.open() for s in batch))
    return opened


async def main(host: str, port: int, path: str, count: int, token: str) -> None:
    streams = [Stream(host, port, path, token) for _ in range(count)]
    connections = await _open_all(streams)
    tasks = [
        asyncio.create_task(s.read(reader))
        for s, (reader, _writer) in zip(streams, connections, strict=True)
    ]
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while line := (await stdin.readline()).decode().split():
        if line[0] != "until":
            continue
        target = int(line[1])
        deadline = loop.time() + 60
        while loop.time() < deadline and any(s.last < target and not s.error for s in streams):
            await asyncio.sleep(0.05)
        merged: dict[int, list[float]] = defaultdict(list)
        for stream in streams:
            for revision, times in stream.receipts.items():
                merged[revision] += times
        result = {
            "receipts": {str(k): v for k, v in merged.items()},
            "short": sum(s.last < target for s in streams),
            "errors": sorted({s.error for s in streams if s.error})[:5],
        }
        print(orjson.dumps(result).decode(), flush=True)
    for task in tasks:
        task.cancel()


if __name__ == "__main__":
    host, port, path, count, *token = sys.argv[1:]
    asyncio.run(main(host, int(port), path, int(count), token[0] if token else ""))
