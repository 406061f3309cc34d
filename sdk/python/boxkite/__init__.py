"""boxkite: the Python client of boxkite, the self-hostable sandbox for
agent code execution. Standard library only.

    from boxkite import Boxkite
    bk = Boxkite()                       # BOXKITE_BASE_URL/BOXKITE_API_KEY, or ~/.boxkite
    sb = bk.sandboxes.create(label="demo")
    print(sb.exec("echo hi")["stdout"])
    sb.delete()

See docs/sdks.md in the boxkite repository.
"""

from ._version import MIN_SERVER_VERSION, __version__
from .aio import AsyncBoxkite
from .client import Boxkite, Page, SandboxPage
from .errors import (
    AuthenticationError,
    BoxkiteError,
    ConflictError,
    ConnectionError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServerVersionError,
    ServiceUnavailableError,
    TimeoutError,
    ValidationError,
)
from .sandbox import ExecStream, Sandbox
from .tools import run_tool, to_anthropic_tools, to_openai_tools

__all__ = [
    "AsyncBoxkite",
    "AuthenticationError",
    "Boxkite",
    "BoxkiteError",
    "ConflictError",
    "ConnectionError",
    "ExecStream",
    "MIN_SERVER_VERSION",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "RateLimitError",
    "Sandbox",
    "SandboxPage",
    "ServerError",
    "ServerVersionError",
    "ServiceUnavailableError",
    "TimeoutError",
    "ValidationError",
    "__version__",
    "run_tool",
    "to_anthropic_tools",
    "to_openai_tools",
]
