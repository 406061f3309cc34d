"""Errors raised by the boxkite SDK.

Every non-2xx answer of the API is one envelope,
``{"error": {"code", "message", "hint", "details", "request_id"}}``; the SDK
raises it as a :class:`BoxkiteError` (or the subclass for its status) that
carries those fields. ``code`` is stable: branch on it, never on ``message``.
"""

from __future__ import annotations

from typing import Any, Optional


class BoxkiteError(Exception):
    """An error answer of the boxkite API, or one the SDK makes itself.

    ``code`` is the API's stable code (``not_found``, ``rate_limited``, …, see
    docs/errors.md); ``hint`` says what to do next; ``status`` is the HTTP
    status (0 when no answer came).
    """

    def __init__(
        self,
        code: str,
        message: str,
        hint: str = "",
        status: int = 0,
        details: Any = None,
        request_id: str = "",
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.status = status
        self.details = details
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        s = f"{self.message} [{self.code}]"
        if self.hint:
            s += f"\nhint: {self.hint}"
        return s

    def to_dict(self) -> dict:
        """The error as the API's envelope body, with the HTTP status."""
        return {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "status": self.status,
            "details": self.details,
            "request_id": self.request_id,
        }


class AuthenticationError(BoxkiteError):
    """401: the API key or access token is missing, unknown or revoked."""


class PermissionDeniedError(BoxkiteError):
    """403: the credential may not do this."""


class NotFoundError(BoxkiteError):
    """404: no such resource (another account's resources are 404 too)."""


class ConflictError(BoxkiteError):
    """409: the resource is not in a state that allows this."""


class ValidationError(BoxkiteError):
    """400/422: the request was malformed or a field is out of range."""


class RateLimitError(BoxkiteError):
    """429: a rate limit or fair-use limit; ``retry_after`` says when to retry."""


class ServiceUnavailableError(BoxkiteError):
    """503: the server cannot take the request now (host capacity, audit)."""


class ServerError(BoxkiteError):
    """5xx other than 503."""


class ConnectionError(BoxkiteError):  # noqa: A001 - the SDK's own, exported as boxkite.ConnectionError
    """The server could not be reached, or the connection broke."""


class TimeoutError(BoxkiteError):  # noqa: A001
    """The call did not finish within its timeout."""


class ServerVersionError(BoxkiteError):
    """The server is older than this SDK's MIN_SERVER_VERSION."""


_BY_STATUS = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_class(status: int) -> type:
    """The BoxkiteError subclass for an HTTP status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return BoxkiteError


# Codes the SDK uses for errors the API did not send.
CODE_CONNECTION = "connection_error"
CODE_TIMEOUT = "timeout"
CODE_SERVER_TOO_OLD = "server_too_old"
CODE_BAD_RESPONSE = "bad_response"
