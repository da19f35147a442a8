"""The listeners: how much of a request the server reads, and how long it waits for it.

`manage.py serve` (its HTTP and its HTTPS listener alike) and the tests' live servers
(``python -m runtimes.api.serving``, daphne's own command line) run daphne with this module's
`Server`, whose HTTP/1.1 channel bounds every request before the application sees it. Twisted's
own limits answer a bare ``400`` with no body, or, for a request line over 16 KiB, drop the
connection without a word; here every refusal is a metav1.Status with its reason, after which
the server half-closes, reads and discards what the client still sends for ``LINGER_SECONDS``
(so the client reads the Status rather than a connection reset) and closes.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, cast

import orjson
from daphne.cli import CommandLineInterface  # imports daphne.server: the asyncio reactor first
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server as DaphneServer
from django.conf import settings
from twisted.internet import tcp
from twisted.web import http
from twisted.web.http_headers import Headers

from runtimes.api import liveness
from runtimes.api.requestid import too_large
from runtimes.apimachinery.errors import ApiError

# The limits, with what kube-apiserver (Go's ``net/http`` under it) does:
#
# | Limit | Ours | Kubernetes | Answer |
# |---|---|---|---|
# | request line (method, path, query) | 16 KiB | in MaxHeaderBytes, 1 MiB | 414 RequestURITooLong |
# | one header field | 16 KiB | in MaxHeaderBytes, 1 MiB | 431 RequestHeaderFieldsTooLarge |
# | all header fields | 32 KiB | MaxHeaderBytes, 1 MiB | 431 RequestHeaderFieldsTooLarge |
# | number of header fields | 100 | no limit | 431 RequestHeaderFieldsTooLarge |
# | request body | 3 MiB | --max-request-bytes, 3 MiB | 413 RequestEntityTooLarge |
# | request line and headers | 10 s | ReadHeaderTimeout, 32 s | 408 RequestTimeout |
# | request body, after the headers | 60 s | --request-timeout, 60 s | 408 RequestTimeout |
# | idle kept-alive connection | 90 s | IdleTimeout, 90 s | closed |
# | labelSelector, fieldSelector, shardSelector | 8 KiB each | none of its own | 400 BadRequest |
# | metadata.annotations, in total | 256 KiB | TotalAnnotationSizeLimitB, 256 KiB | 422 Invalid |
# | metadata.labels, in total | 64 KiB | no limit of its own | 422 Invalid |
#
# Why these values. The 16 KiB line is the limit Twisted has always applied to every line, so no
# client that works today breaks; it holds an 8 KiB selector (``api.listoptions``) with room to
# spare. 32 KiB of headers in 100 fields is what nginx reads by default (four 8 KiB buffers) and
# many times what kubectl (six fields) or a browser with its session cookies sends. The body limit
# is ``NODUS_MAX_BODY_BYTES`` (kube's default); here a declared length over it is refused before
# a byte of the body is read, where the application could only refuse it once it was all buffered.
# The headers deadline runs from the connection's first moment (a client that connects and sends
# nothing is closed quietly when it passes) or, on a kept-alive connection, from the next request's
# first byte; a slow-loris client that sends one byte at a time resets Twisted's idle timer forever
# but not this deadline. 10 s, where Go allows 32 s: a real client sends its headers in one
# packet. The body deadline matches kube's request timeout and gives a 3 MiB body 50 KB/s. Idle
# connections close after 90 s as Go's do, and as ``http.DefaultTransport`` (client-go) expects.
# Once the body has arrived nothing here limits the response: watches stream for as long as they
# are wanted. The metadata limits are enforced in ``apimachinery.metadata_rules``, the selector
# limit in ``api.listoptions``; the values in this table are checked against theirs by the tests.
# HTTP/2 is not offered: its framing has limits of its own that this channel does not bound.

log = logging.getLogger("nodus.request")

MAX_LINE_BYTES = 16 * 1024
MAX_HEADER_BYTES = 32 * 1024
MAX_HEADER_FIELDS = 100
HEADERS_DEADLINE_SECONDS = 10
BODY_DEADLINE_SECONDS = 60
IDLE_TIMEOUT_SECONDS = 90
# nginx lingers up to 5 s between reads (30 s in all); Go waits 0.5 s before it closes.
LINGER_SECONDS = 2
# Connections the kernel holds for us before we accept them (Twisted's default is 50): a herd of
# a thousand informers reconnecting at once must queue, not have its SYNs dropped.
LISTEN_BACKLOG = 1024
# Bytes a streamed response may write while its client is not reading (the socket's buffer
# full): past this a watch whose client stopped reading is cut off, as kube-apiserver drops a
# watcher whose buffer stays full, instead of the server holding every event for it in memory.
MAX_UNSENT_BYTES = 1024 * 1024
# ... and only once it has not read for this long: a full buffer may only mean that the server
# wrote a burst faster than its loop could send it (1,000 watchers each sent the events that
# piled up while the loop was busy), which the client then reads at once.
STALLED_SECONDS = 10.0
# However long it has read nothing, a stream is cut once it owes this much (a bound on memory).
BURST_UNSENT_BYTES = 4 * MAX_UNSENT_BYTES

_UNPARSABLE = (
    "the request is not valid HTTP/1.1: its request line, a header field, Content-Length or "
    "chunked framing could not be parsed"
)


def status_bytes(error: ApiError) -> bytes:
    """A whole HTTP/1.1 response carrying `error` as a Status, after which the server closes."""
    body = error.status()
    body["docs"] = f"/docs/errors/{error.reason}"  # no Host header to make it absolute with
    payload = orjson.dumps(body)
    head = (
        f"HTTP/1.1 {error.code} {HTTPStatus(error.code).phrase}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + payload


# The cyclic collector's thresholds while serving (Python's: 700, 10, 10). A young collection
# after 5,000 new containers, not 700, lets a request's objects die young (by reference count)
# instead of being promoted; a full one waits for 100 middle ones, not 10. At 10,000 objects and
# 1,000 watchers (`make bench-scale`, nodus alone, one run each), Python's thresholds made 34
# full collections of 130-310 ms each and 518 young ones over 5 ms, 9.4 s of pauses in all; these
# made no full one and 345 young ones over 5 ms (at most 107 ms), 4.2 s, at a peak RSS of 408 MB
# against 389.
COLLECTOR_THRESHOLDS = (5_000, 20, 100)


def settle_collector() -> None:
    """Sets the collector up for serving, once everything the process keeps is loaded.

    Everything set up so far (modules, settings, URL patterns, schemas: about 260,000 objects)
    lives as long as the process. Frozen, the collector no longer walks it on every full
    collection: the first one under a burst of requests stalled every request for 1.5-2.7 s (a
    client's slowest of 80 lists beside 200 greedy ones: 2.1-2.9 s, then 0.95 s with this;
    docs/benchmarks.md, "Fairness under a greedy client")."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def _sendable_now(transport: Any) -> bool:
    """Whether a write may go straight to `transport`'s socket: a plain TCP connection, open,
    with nothing of its own still waiting to be sent (Twisted's `FileDescriptor` buffers)."""
    return (
        isinstance(transport, tcp.Server)
        and not transport.TLS
        and bool(transport.connected)
        and not transport.disconnecting
        and not transport._writeDisconnected
        and not transport._tempDataBuffer
        and transport.offset >= len(transport.dataBuffer)
    )


def _unsent(parts: list[bytes], sent: int) -> list[bytes]:
    """What is left of `parts` once `sent` bytes of them went out: only the part the send
    stopped in is copied (a list's body is tens of megabytes; joining the head to it was one
    more copy of it)."""
    for index, part in enumerate(parts):
        if sent < len(part):
            return [part[sent:] if sent else part, *parts[index + 1 :]]
        sent -= len(part)
    return []


class BoundedChannel(http.HTTPChannel):
    """Twisted's HTTP/1.1 channel with the limits and deadlines above, refusing with a Status.

    Phases: ``headers`` (the request line and headers are due by a deadline), ``body`` (the body
    is due by a deadline), ``busy`` (the application has the request: no deadline), ``idle``
    (kept alive between requests: Twisted's idle timeout alone).
    """

    MAX_LENGTH = MAX_LINE_BYTES
    # Twisted's own checks answer a bare 400; they sit above ours so that ours always answer.
    totalHeadersSize = MAX_LINE_BYTES + MAX_HEADER_BYTES + 1
    maxHeaders = MAX_HEADER_FIELDS + 1
    max_body_bytes = 3 * 1024 * 1024  # the factory sets NODUS_MAX_BODY_BYTES

    def __init__(self) -> None:
        super().__init__()
        self._phase = "headers"
        self._deadline: Any = None  # a twisted DelayedCall (its zope interface types badly)
        self._refused = False
        self._request_begun = False
        self._awaiting_request_line = True
        self._header_bytes = 0
        self._header_fields = 0

    # Writing: a stream whose client stops reading is cut off once it owes MAX_UNSENT_BYTES and
    # has not read for STALLED_SECONDS, or at once past BURST_UNSENT_BYTES.

    _unsent = 0  # bytes of a stream written since the transport's buffer filled
    _streamed = 0  # bytes of streams written on this connection
    _stall: Any = None  # the DelayedCall that marks the stream stalled
    _stalled_long = False  # the transport has been full for STALLED_SECONDS
    _cut = False

    # A response's status line and headers wait for its first body bytes, to go out with them
    # in one send: Twisted writes them to the transport itself, where they waited for the loop's
    # next turn, and so did the body behind them. A response with no body bytes in the same
    # write (a HEAD, a 204, a watch's start) has them sent when its request is done or on the
    # loop's next turn, whichever comes first.
    _head: list[bytes] | None = None

    def writeHeaders(self, version: bytes, code: bytes, reason: bytes, headers: Any) -> None:
        if not isinstance(headers, Headers):  # Twisted's old calling form: its own way
            super().writeHeaders(version, code, reason, headers)
            return
        head = [version, b" ", code, b" ", reason, b"\r\n"]
        for name, values in headers.getAllRawHeaders():  # sanitized by Twisted's Headers
            for value in values:
                head.extend((name, b": ", value, b"\r\n"))
        head.append(b"\r\n")
        self._head = head
        self.callLater(0, self._send_head)

    def _send_head(self) -> None:
        head, self._head = self._head, None
        if head is not None and self.transport is not None and not self._cut:
            self._send(head, sum(len(part) for part in head))

    def write(self, data: bytes) -> None:
        self.writeSequence([data])

    def writeSequence(self, iovec: list[bytes]) -> None:
        size = sum(len(part) for part in iovec)
        if not self._owes(size):  # a stream's bytes count, not its head's
            return
        head, self._head = self._head, None
        if head is not None:
            iovec = [*head, *iovec]
            size += sum(len(part) for part in head)
        self._send(iovec, size)

    def _send(self, parts: list[bytes], size: int) -> None:
        """Hands `parts` to the socket at once when nothing is queued before them (an answer,
        a watch's event to a client that keeps up); what the socket does not take, or every
        write of a TLS or otherwise busy connection, goes through Twisted's buffer as before.
        Twisted alone queues each write for the loop's next turn: two epoll_ctl calls and a
        turn per write, and the loop thread gives up the interpreter lock at each call."""
        transport: Any = self.transport
        if not _sendable_now(transport):
            transport.writeSequence(parts)
            return
        try:
            sent = transport.socket.sendmsg(parts)
        except OSError:  # full (EAGAIN) or gone (EPIPE, ECONNRESET): Twisted's write handles it
            sent = 0
        if sent < size:
            transport.writeSequence(_unsent(parts, sent))

    def _streaming(self) -> bool:
        """Whether the response being written is a chunked stream (a watch)."""
        return bool(self.requests and getattr(self.requests[-1], "chunked", False))

    def pauseProducing(self) -> None:
        """The transport's buffer is full. A stream's client that reads nothing more for
        STALLED_SECONDS, while it owes more than MAX_UNSENT_BYTES, is cut then: a full buffer
        alone only says that the server wrote faster than the loop could send (a burst of events
        after the loop was busy), not that the client stopped reading."""
        if self._stall is None and self._streaming():
            self._stall = self.callLater(STALLED_SECONDS, self._stalled)
        super().pauseProducing()

    def resumeProducing(self) -> None:
        self._unsent = 0  # the client read again: the socket's buffer has room
        self._stalled_long = False
        self._cancel_stall()
        super().resumeProducing()

    def _cancel_stall(self) -> None:
        if self._stall is not None:
            if self._stall.active():
                self._stall.cancel()
            self._stall = None

    def _stalled(self) -> None:
        self._stall = None
        self._stalled_long = self._waitingForTransport
        if self._stalled_long and self._unsent > MAX_UNSENT_BYTES:
            self._cut_off(f"read nothing for {STALLED_SECONDS:g} s")

    def _owes(self, size: int) -> bool:
        """Counts `size` bytes of a stream written while the transport is full; False once the
        stream is cut. A response with a length (a list) is bounded by itself and always
        written."""
        if self._cut:
            return False
        if not self._streaming():
            return True
        self._streamed += size
        if not self._waitingForTransport:
            return True
        self._unsent += size
        if self._stalled_long and self._unsent > MAX_UNSENT_BYTES:
            self._cut_off(f"read nothing for {STALLED_SECONDS:g} s")
        elif self._unsent > BURST_UNSENT_BYTES:
            self._cut_off("owes more than a burst may")
        return not self._cut

    def _cut_off(self, why: str) -> None:
        self._cut = True
        self._cancel_stall()
        transport: Any = self.transport
        if transport is None or transport.disconnecting:
            return
        # A warning: a cut watcher re-lists (an informer) or loses events (anything else).
        log.warning(
            "closing a connection whose client stopped reading: it %s "
            "(%d bytes unsent, %d bytes streamed in all)",
            why,
            self._unsent,
            self._streamed,
        )
        transport.abortConnection()

    # Twisted's callbacks, in the order a request meets them.

    def connectionMade(self) -> None:
        super().connectionMade()
        self._expect_request(begun=False)

    def dataReceived(self, data: bytes) -> None:
        if self._refused:
            return  # lingering: read and discard
        if self._phase == "idle":
            self._expect_request(begun=True)
        elif self._phase == "headers":
            self._request_begun = True
        super().dataReceived(data)

    def lineReceived(self, line: bytes) -> None:
        if self._refused:
            return
        if self._awaiting_request_line:
            # Blank lines before a request line are tolerated once by Twisted (IE's extra CRLF).
            self._awaiting_request_line = not line
        elif line:
            self._header_bytes += len(line)
            if line[:1] not in (b" ", b"\t"):  # a continuation line is not a new field
                self._header_fields += 1
            if self._header_bytes > MAX_HEADER_BYTES or self._header_fields > MAX_HEADER_FIELDS:
                self.refuse(
                    ApiError(
                        "RequestHeaderFieldsTooLarge",
                        f"the request's header fields are over the server's limit of "
                        f"{MAX_HEADER_BYTES} bytes in {MAX_HEADER_FIELDS} fields",
                    )
                )
                return
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:
        if self._awaiting_request_line:
            self.refuse(
                ApiError(
                    "RequestURITooLong",
                    f"the request line is longer than the server's limit of {MAX_LINE_BYTES} bytes",
                )
            )
        else:
            self.refuse(
                ApiError(
                    "RequestHeaderFieldsTooLarge",
                    f"a header field is longer than the server's limit of {MAX_LINE_BYTES} bytes",
                )
            )

    def allHeadersReceived(self) -> None:
        if self.length is not None and self.length > self.max_body_bytes:
            self.refuse(too_large())  # before Twisted answers "100 Continue" or reads a byte
            return
        super().allHeadersReceived()
        self._phase = "body"
        self._arm(BODY_DEADLINE_SECONDS, self._body_overdue)

    def rawDataReceived(self, data: bytes) -> None:
        if not self._refused:
            super().rawDataReceived(data)

    def allContentReceived(self) -> None:
        if self._refused:
            return
        self._phase = "busy"
        self._disarm()
        super().allContentReceived()

    def requestDone(self, request: http.Request) -> None:
        # Before Twisted replays pipelined bytes into dataReceived, which starts the next request.
        self._phase = "idle"
        self._send_head()
        super().requestDone(request)

    def connectionLost(self, reason: Any = None) -> None:
        self._disarm()
        self._cancel_stall()
        super().connectionLost(reason)

    def _respondToBadRequestAndDisconnect(self) -> None:
        self.refuse(ApiError("BadRequest", _UNPARSABLE))

    # Ours.

    def refuse(self, error: ApiError) -> None:
        """Answers `error` as a Status, stops reading requests and closes after lingering."""
        if self._refused:
            return
        self._refused = True
        self._disarm()
        self.setTimeout(None)  # the linger timer governs from here
        transport: Any = self.transport
        log.info("refused %s: %s %s", transport.getPeer(), error.code, error.message)
        transport.write(status_bytes(error))
        # Over TCP a half-close shows the client the end of the answer at once. Not over TLS:
        # its wrapper would pass the half-close to the socket beneath, ahead of the encrypted
        # answer it still holds.
        if not self.isSecure() and hasattr(transport, "loseWriteConnection"):
            transport.loseWriteConnection()
        self._arm(LINGER_SECONDS, self._close)

    def _expect_request(self, *, begun: bool) -> None:
        self._phase = "headers"
        self._request_begun = begun
        self._awaiting_request_line = True
        self._header_bytes = self._header_fields = 0
        self._arm(HEADERS_DEADLINE_SECONDS, self._headers_overdue)

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.callLater(seconds, then)

    def _disarm(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _headers_overdue(self) -> None:
        self._deadline = None
        if not self._request_begun:
            self._close()  # nothing was asked: closed quietly, like an idle connection
            return
        self.refuse(
            ApiError(
                "RequestTimeout",
                f"the request line and headers did not arrive within {HEADERS_DEADLINE_SECONDS} s",
            )
        )

    def _body_overdue(self) -> None:
        self._deadline = None
        self.refuse(
            ApiError(
                "RequestTimeout",
                f"the request body did not arrive within {BODY_DEADLINE_SECONDS} s of its headers",
            )
        )

    def _close(self) -> None:
        self._deadline = None
        self.loseConnection()
        # A client that does not read cannot hold the connection: Twisted's own forced abort.
        self._abortingCall = self.callLater(self.abortTimeout, self.forceAbortClient)


class StatusRequest(WebRequest):  # type: ignore[misc]
    """daphne's request, whose own answers (a bad header name, a path that is not ASCII, an
    application that fails before it answers) are Status objects too, and whose chunked body
    counts against the body limit as it arrives."""

    _REASONS = {400: "BadRequest", 503: "ServiceUnavailable"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.body_bytes = 0
        super().__init__(*args, **kwargs)
        # Twisted parses a POST's form body into `args` (its Content-Type with the email
        # package, a multipart body with its MIME parser), which daphne never reads: the
        # application parses the body it is given. Parsing the Content-Type alone was a tenth
        # of the event loop's time in a burst of creates.
        self._parsePOSTFormSubmission = False

    def handleContentChunk(self, data: bytes) -> None:
        channel = cast(BoundedChannel, self.channel)
        self.body_bytes += len(data)
        if self.body_bytes > channel.max_body_bytes:
            channel.refuse(too_large())
            return
        super().handleContentChunk(data)

    def basic_error(self, status: int, _status_text: bytes, body: str) -> None:
        error = ApiError(self._REASONS.get(status, "InternalError"), body)
        status_body = error.status()
        status_body["docs"] = f"/docs/errors/{error.reason}"
        self.handle_reply(
            {
                "type": "http.response.start",
                "status": error.code,
                "headers": [(b"Content-Type", b"application/json")],
            }
        )
        self.handle_reply({"type": "http.response.body", "body": orjson.dumps(status_body)})


class BoundedHTTPFactory(HTTPFactory):  # type: ignore[misc]
    """daphne's factory, building bounded channels that speak HTTP/1.1 only."""

    protocol = BoundedChannel

    def __init__(self, server: DaphneServer) -> None:
        super().__init__(server)
        self.timeOut = IDLE_TIMEOUT_SECONDS

    def buildProtocol(self, addr: Any) -> BoundedChannel:
        # Twisted's buildProtocol, not daphne's, which would put its own request class back.
        channel = cast(BoundedChannel, http.HTTPFactory.buildProtocol(self, addr))
        channel.requestFactory = StatusRequest
        channel.max_body_bytes = settings.NODUS_MAX_BODY_BYTES
        return channel

    def acceptableProtocols(self) -> list[bytes]:
        return [b"http/1.1"]


def share_ports() -> None:
    """Lets several processes listen on the same ports (SO_REUSEPORT): the kernel spreads new
    connections across them, so N workers answer behind one HTTP and one HTTPS port
    (`manage.py serve --workers N`). Twisted sets the option only for ports it is given a
    binding for, never for the endpoint descriptions daphne passes; so every TCP (and TLS,
    its subclass) listening socket of this process gets it."""
    from twisted.internet import tcp

    original = tcp.Port.createInternetSocket
    if getattr(original, "shared", False):
        return

    def create(port: Any) -> socket.socket:
        made: socket.socket = original(port)
        made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        return made

    create.shared = True  # type: ignore[attr-defined]
    tcp.Port.createInternetSocket = create  # type: ignore[method-assign]
    global _PORTS_SHARED
    _PORTS_SHARED = True


_PORTS_SHARED = False
_ACCEPTORS: list[liveness.Acceptor] = []


def listening_socket(endpoint: str) -> socket.socket:
    """A bound, listening socket for a `tcp:` endpoint description (port, interface, backlog),
    as Twisted's TCP port makes one (SO_REUSEADDR; SO_REUSEPORT once `share_ports` ran)."""
    options: dict[str, str] = {}
    escaped = "\N{NULL}"  # an escaped colon (an IPv6 interface's) while the options split
    rest = endpoint.removeprefix("tcp:").replace("\\:", escaped)
    for index, part in enumerate(rest.split(":")):
        key, equals, value = part.partition("=")
        if not equals:
            key, value = ("port" if index == 0 else key), part
        options[key] = value.replace(escaped, ":")
    interface = options.get("interface", "")
    family = socket.AF_INET6 if ":" in interface else socket.AF_INET
    made = socket.socket(family, socket.SOCK_STREAM)
    made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if _PORTS_SHARED:
        made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    made.set_inheritable(False)
    made.bind((interface, int(options["port"])))
    made.listen(int(options.get("backlog", LISTEN_BACKLOG)))
    return made


def stop_accepting() -> int:
    """Closes the listeners whose accept loop is `liveness.Acceptor`'s (draining); how many."""
    stopped = len(_ACCEPTORS)
    for acceptor in _ACCEPTORS:
        acceptor.stop()
    _ACCEPTORS.clear()
    return stopped


def with_backlog(endpoint: str) -> str:
    """A TCP or TLS endpoint description with room for `LISTEN_BACKLOG` pending connections."""
    if endpoint.startswith(("tcp:", "ssl:")) and "backlog=" not in endpoint:
        return f"{endpoint}:backlog={LISTEN_BACKLOG}"
    return endpoint


class Server(DaphneServer):  # type: ignore[misc]
    """daphne's server, every endpoint of which uses the bounded factory and a deep backlog."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        given: list[str] = list(getattr(self, "endpoints", None) or [])
        self.endpoints = [with_backlog(endpoint) for endpoint in given]

    def run(self) -> None:
        """daphne's run, with each plain TCP listener accepting on a thread of its own, which
        answers GET /livez there and hands every other connection to Twisted
        (`runtimes.api.liveness`). TLS listeners stay Twisted's."""
        from twisted.internet import reactor

        plain = [endpoint for endpoint in self.endpoints if endpoint.startswith("tcp:")]
        self.endpoints = [endpoint for endpoint in self.endpoints if endpoint not in plain]
        heartbeat = liveness.Heartbeat()
        for endpoint in plain:
            acceptor = liveness.Acceptor(listening_socket(endpoint), self._hand_over, heartbeat)
            _ACCEPTORS.append(acceptor)
            reactor.callWhenRunning(acceptor.start)
            self.listening_addresses.append(acceptor.listening.getsockname()[:2])
            logging.getLogger("daphne.server").info(
                "Listening on TCP address %s:%s (GET /livez answered off the event loop)",
                *acceptor.listening.getsockname()[:2],
            )
        reactor.callWhenRunning(heartbeat.start, reactor)
        reactor.callWhenRunning(self._learn_probe_headers)
        super().run()

    def _learn_probe_headers(self) -> None:
        async def learn() -> None:
            try:
                headers = await liveness.learn_headers(self.application)
            except Exception:  # probes then stay the application's to answer
                logging.getLogger("nodus.liveness").exception("could not learn /livez headers")
                return
            for acceptor in _ACCEPTORS:
                acceptor.headers = headers

        # Startup triggers run before the loop does: the task starts on its first turn.
        self._learning = asyncio.get_event_loop().create_task(learn())

    def _hand_over(self, connections: list[socket.socket]) -> None:
        """From the acceptor's thread: the connections become Twisted's, on the event loop."""
        from twisted.internet import reactor

        reactor.callFromThread(self._adopt, connections)

    def _adopt(self, connections: list[socket.socket]) -> None:
        from twisted.internet import reactor

        for connection in connections:
            try:
                reactor.adoptStreamConnection(
                    connection.fileno(), connection.family, self.http_factory
                )
            except OSError:
                pass  # the client left before it was adopted
            finally:
                connection.close()  # Twisted holds its own duplicate

    @property
    def http_factory(self) -> BoundedHTTPFactory:
        return self._bounded_factory

    @http_factory.setter
    def http_factory(self, _daphnes: HTTPFactory) -> None:
        # daphne's run() builds its own factory inline and listens with it; ours takes its place.
        self._bounded_factory = BoundedHTTPFactory(self)


class CommandLine(CommandLineInterface):  # type: ignore[misc]
    """daphne's command line (the same options) with the bounded server."""

    server_class = Server


if __name__ == "__main__":
    CommandLine.entrypoint()
