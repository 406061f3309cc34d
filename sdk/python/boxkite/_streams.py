"""Readers of the API's streams: NDJSON exec events and server-sent events."""

from __future__ import annotations

import json
from typing import Iterator, Optional, Tuple

from . import errors
from ._http import Response


def ndjson(resp: Response) -> Iterator[dict]:
    """Each JSON line of a streamed answer, until it ends."""
    with resp:
        for line in resp.iter_lines():
            if not line.strip():
                continue
            try:
                yield json.loads(line.decode("utf-8"))
            except ValueError as e:
                raise errors.BoxkiteError(
                    code=errors.CODE_BAD_RESPONSE, message=f"a stream line is not JSON: {e}", status=resp.status
                ) from e


def sse(resp: Response) -> Iterator[Tuple[Optional[str], str]]:
    """(id, data) of each server-sent event; comments (keep-alives) are
    skipped. Returns when the stream ends."""
    with resp:
        ev_id: Optional[str] = None
        data: list = []
        for raw in resp.iter_lines():
            line = raw.decode("utf-8")
            if line == "":
                if data:
                    yield ev_id, "\n".join(data)
                ev_id, data = None, []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "id":
                ev_id = value
            elif field == "data":
                data.append(value)


def raise_event_error(ev: dict) -> None:
    """Raise the error a stream's {"type":"error"} event carries."""
    e = ev.get("error") or {}
    code = e.get("code") or "internal_error"
    raise errors.BoxkiteError(
        code=code,
        message=e.get("message") or "the stream ended with an error",
        hint=e.get("hint") or "",
        status={"sandbox_lost": 410, "sandbox_operation_failed": 502}.get(code, 0),
        details=e.get("details"),
        request_id=e.get("request_id") or "",
    )
