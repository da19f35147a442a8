"""WhiteNoise, usable from async middleware chains.

WhiteNoise's middleware is sync only. Django adapts a sync middleware by running it, and every
middleware above it, on a thread: each request paid for thread hops there and back, even API
requests that never touch a static file. This subclass is async capable: a request for a
static file is served as WhiteNoise serves it (its file is opened on a thread); any other
request goes straight on to the next middleware, on the event loop.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware


class AsyncWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any = None) -> None:
        super().__init__(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            response: HttpResponseBase = await sync_to_async(self.serve)(static_file, request)
            return response
        result: HttpResponseBase = await self.get_response(request)
        return result
