"""The asyncio client: :class:`AsyncBoxkite` runs the synchronous client's
calls in worker threads (``asyncio.to_thread``), so there is one HTTP
implementation. Every method of the sync client is a coroutine here, and
every stream an async iterator whose items are read in a thread one at a
time: ``async for e in sb.log.follow()`` (log.entries, processes.stream,
images.follow_logs alike), and ``async for ev in await sb.exec_stream(…)``,
whose request is made when it is awaited.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Iterator, Optional

from .client import Boxkite

_PLAIN = (str, bytes, bytearray, int, float, bool, dict, list, tuple, type(None))
_END = object()


def _next(it: Iterator[Any]) -> Any:
    return next(it, _END)


class AsyncStream:
    """An async iterator over a sync stream, read in a thread. Attributes of
    the stream (ExecStream.result, .stdout, …) read through."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._it: Optional[Iterator[Any]] = None

    def __aiter__(self) -> "AsyncStream":
        return self

    async def __anext__(self) -> Any:
        if self._it is None:
            self._it = iter(self._stream)
        item = await asyncio.to_thread(_next, self._it)
        if item is _END:
            raise StopAsyncIteration
        return _wrap(item)  # a Sandbox of sandboxes.all() becomes async too

    async def aclose(self) -> None:
        """Stop the stream and close its connection."""
        close = getattr(self._it, "close", None)
        if close is not None:
            await asyncio.to_thread(close)

    async def wait(self) -> Any:
        """ExecStream.wait, in a thread."""
        return await asyncio.to_thread(self._stream.wait)

    async def signal(self, signal: str = "SIGINT") -> Any:
        """ExecStream.signal (Ctrl-C for a streamed exec), in a thread."""
        return await asyncio.to_thread(self._stream.signal, signal)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _wrap(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        if isinstance(value, list) and value and not isinstance(value[0], _PLAIN):
            out = [_wrap(v) for v in value]
            if type(value) is list:
                return out
            page = type(value)(out)  # a SandboxPage keeps its next_cursor
            page.__dict__.update(value.__dict__)
            return page
        return value
    if hasattr(value, "__iter__") or hasattr(value, "__next__"):
        return AsyncStream(value)
    return _AsyncProxy(value)


class _AsyncProxy:
    """Wraps a sync object: its methods become coroutines run in a thread,
    its resource attributes proxies, its data attributes plain values."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.isgeneratorfunction(attr):
            # A generator does no I/O until it is iterated: hand back the
            # async iterator at once (async for e in sb.log.follow()).
            @functools.wraps(attr)
            def stream(*args: Any, **kwargs: Any) -> AsyncStream:
                return AsyncStream(attr(*args, **kwargs))

            return stream
        if callable(attr):

            @functools.wraps(attr)
            async def call(*args: Any, **kwargs: Any) -> Any:
                return _wrap(await asyncio.to_thread(attr, *args, **kwargs))

            return call
        return _wrap(attr)

    def __getitem__(self, key: str) -> Any:
        return self._target[key]

    def __repr__(self) -> str:
        return f"Async{self._target!r}"


class AsyncBoxkite(_AsyncProxy):
    """The asyncio twin of :class:`boxkite.Boxkite`; same arguments, same
    methods, awaited::

        async with AsyncBoxkite() as bk:
            sb = await bk.sandboxes.create()
            async for ev in await sb.exec_stream("echo hi"):
                ...
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(Boxkite(*args, **kwargs))

    async def __aenter__(self) -> "AsyncBoxkite":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None
