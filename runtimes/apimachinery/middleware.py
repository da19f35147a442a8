"""A base for Django middleware that runs as the chain around it does, sync or async, so an
async view (a watch stream) is never pushed through a thread by our middleware."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction


class HybridMiddleware:
    """Subclasses write `_call(request)` and `async _acall(request)`."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if self.is_async:
            return self._acall(request)
        return self._call(request)

    def _call(self, request: Any) -> Any:
        raise NotImplementedError

    async def _acall(self, request: Any) -> Any:
        raise NotImplementedError
