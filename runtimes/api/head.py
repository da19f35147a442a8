"""HEAD answered with the headers of GET and no body, however large the body would be.

Django's ASGI handler sends a response's body in 64 KiB messages, HEAD or not, and the server
drops only the first of them: a HEAD on a list larger than 64 KiB wrote the rest of the list
after the headers, and a client reusing the connection read that JSON as its next response.
Here the body of every HEAD response is dropped before it reaches the server, whoever wrote it
(Django, the flow control's or the drain's own answers); Content-Length still says what GET
would send (RFC 9110 §9.3.2).
"""

from __future__ import annotations

from runtimes.api.flowcontrol import ASGIApp, Message, Receive, Scope, Send


class HeadWithoutBody:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, without_body)
