"""The synchronous client: :class:`Boxkite` and its resource collections."""

from __future__ import annotations

from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Union

from . import _config
from ._http import TEXT_TYPES, Transport, new_idempotency_key, next_cursor, quote
from .sandbox import Sandbox


def _body(fields: Dict[str, Any]) -> Dict[str, Any]:
    """A request body without the fields left at None."""
    return {k: v for k, v in fields.items() if v is not None}


class Collection:
    """A REST collection under one path: create, list, get, delete.

    A new API resource is a subclass naming its path (and, where its
    create takes fields, a create method that passes them on).
    """

    path = ""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _create(self, body: Dict[str, Any], idempotency_key: Optional[str]) -> Any:
        return self._t.request(
            "POST", self.path, json=_body(body), idempotency_key=idempotency_key or new_idempotency_key()
        )

    def list(self) -> List[dict]:
        """Every item of the account, newest first."""
        return self._t.request("GET", self.path) or []

    def get(self, id: str) -> dict:
        return self._t.request("GET", f"{self.path}/{quote(id)}")

    def delete(self, id: str) -> None:
        self._t.request("DELETE", f"{self.path}/{quote(id)}")


class Page(List[dict]):
    """A page of a paged list (:meth:`Paged.page`, :meth:`Webhooks.deliveries`):
    a list of items, with ``next_cursor``, the cursor of the next page
    (None on the last one)."""

    next_cursor: Optional[str] = None


def _page(t: Transport, path: str, query: Dict[str, Any]) -> Page:
    """One page of the list at path, its next cursor from the answer's
    Link: rel="next"."""
    data, headers = t.request("GET", path, query=query, want_headers=True)
    page = Page(data or [])
    page.next_cursor = next_cursor(headers)
    return page


def _pages(read: Any, page_size: int) -> Iterator[dict]:
    """Every item of the pages read(limit, cursor) gives, page_size (0 or
    less: 100, as the Go client) at a time."""
    limit = page_size if page_size and page_size > 0 else 100
    cursor: Optional[str] = None
    while True:
        page = read(limit, cursor)
        yield from page
        if not page.next_cursor:
            return
        cursor = page.next_cursor


class Paged(Collection):
    """A collection whose list pages as the sandboxes' does (limit, cursor
    and Link: rel="next"): images and webhooks."""

    def page(self, limit: int, cursor: Optional[str] = None) -> Page:
        """One page of the account's items, newest first: at most limit
        (1..1000), after the page whose ``next_cursor`` is cursor."""
        return _page(self._t, self.path, {"limit": limit, "cursor": cursor})

    def all(self, page_size: int = 100) -> Iterator[dict]:
        """Every item of the account, newest first, read page_size at a
        time: one made meanwhile is not seen, and none is seen twice."""
        return _pages(self.page, page_size)


class Volumes(Collection):
    """Persistent volumes, mounted into sandboxes by id."""

    path = "/v1/volumes"

    def create(self, label: Optional[str] = None, size_gb: Optional[float] = None, *, idempotency_key: Optional[str] = None) -> dict:
        return self._create({"label": label, "size_gb": size_gb}, idempotency_key)


class MCPConnections(Collection):
    """Named egress grants to an MCP catalog host."""

    path = "/v1/mcp-connections"

    def create(self, label: str, catalog_id: str, *, idempotency_key: Optional[str] = None) -> dict:
        return self._create({"label": label, "catalog_id": catalog_id}, idempotency_key)


class APIKeys(Collection):
    """The account's API keys (an admin key or an access token may manage them)."""

    path = "/v1/api-keys"

    def create(self, name: str, role: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> dict:
        """Create a key; the answer's ``key`` is shown this once."""
        return self._create({"name": name, "role": role}, idempotency_key)

    def revoke(self, id: str) -> None:
        self.delete(id)

    def get(self, id: str) -> dict:  # the API has no GET /v1/api-keys/{id}
        for k in self.list():
            if k.get("id") == id:
                return k
        from .errors import NotFoundError

        raise NotFoundError(code="not_found", message=f"no API key {id}", hint="list keys with api_keys.list()", status=404)


class SSHKeys(Collection):
    """SSH public keys the bastion accepts for this account."""

    path = "/v1/account/ssh-keys"

    def create(self, public_key: str, name: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> dict:
        return self._create({"public_key": public_key, "name": name}, idempotency_key)

    def get(self, id: str) -> dict:  # the API has no GET for one key
        for k in self.list():
            if k.get("id") == id:
                return k
        from .errors import NotFoundError

        raise NotFoundError(code="not_found", message=f"no SSH key {id}", hint="list keys with ssh_keys.list()", status=404)


class Webhooks(Paged):
    """Webhook subscriptions: the account's events sent, signed, to a URL
    (docs/webhooks.md); a subscription's deliveries log; test and redelivery."""

    path = "/v1/webhooks"

    def create(
        self,
        url: str,
        event_types: List[str],
        description: Optional[str] = None,
        payload_format: Optional[str] = None,
        hec_token: Optional[str] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> dict:
        """Subscribe ``url``; the answer's ``secret`` (it signs every delivery) is shown this once."""
        body = {"url": url, "event_types": event_types, "description": description, "payload_format": payload_format, "hec_token": hec_token}
        return self._create(body, idempotency_key)

    def deliveries(
        self, id: str, limit: Optional[int] = None, offset: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page:
        """A page of the subscription's deliveries, newest first: limit
        (1..100; None: 20) after the newest offset, or after the page whose
        ``next_cursor`` is cursor (None on the last page)."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return _page(self._t, f"{self.path}/{quote(id)}/deliveries", query)

    def all_deliveries(self, id: str, page_size: int = 100) -> Iterator[dict]:
        """Every delivery of the subscription, newest first, read page_size
        (at most 100) at a time: one queued meanwhile is not seen, and none
        is seen twice."""
        return _pages(lambda limit, cursor: self.deliveries(id, limit=min(limit, 100), cursor=cursor), page_size)

    def test(self, id: str) -> dict:
        """Queue a webhook.test event for this subscription; returns the delivery."""
        return self._t.request("POST", f"{self.path}/{quote(id)}/test")

    def redeliver(self, id: str, delivery_id: str) -> dict:
        """Send a delivered or failed delivery's event again (same event_id); returns the new delivery."""
        return self._t.request("POST", f"{self.path}/{quote(id)}/deliveries/{quote(delivery_id)}/redeliver")


class Secrets(Collection):
    """The account's secrets: write-only values the server sends only to
    their allowed hosts (Sandbox.http_request substitutes {{secret:NAME}}).
    ``id`` may be the secret's id or its name."""

    path = "/v1/secrets"

    def create(
        self,
        name: str,
        value: str,
        allowed_hosts: List[str],
        trust_tier: Optional[str] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> dict:
        """Create a secret (admin keys); the answer never has the value."""
        return self._create({"name": name, "value": value, "allowed_hosts": allowed_hosts, "trust_tier": trust_tier}, idempotency_key)

    def update(self, id: str, value: str, allowed_hosts: Optional[List[str]] = None) -> dict:
        """Replace a secret's value (and allowed_hosts when given)."""
        return self._t.request("PUT", f"{self.path}/{quote(id)}", json=_body({"value": value, "allowed_hosts": allowed_hosts}))

    def get(self, id: str) -> dict:  # the API has no GET of one secret
        for s in self.list():
            if id in (s.get("id"), s.get("name")):
                return s
        from .errors import NotFoundError

        raise NotFoundError(code="not_found", message=f"no secret {id}", hint="list secrets with secrets.list()", status=404)


class Images(Paged):
    """Sandbox images: built from a spec, or imported from an OCI layout."""

    path = "/v1/images"

    def create(
        self,
        label: Optional[str] = None,
        base: Optional[str] = None,
        apt_packages: Optional[List[str]] = None,
        python_packages: Optional[List[str]] = None,
        npm_packages: Optional[List[str]] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> dict:
        """Start a build; poll get(id) until status is ready or failed."""
        return self._create(
            {"label": label, "base": base, "apt_packages": apt_packages, "python_packages": python_packages, "npm_packages": npm_packages},
            idempotency_key,
        )

    def import_archive(self, archive: Union[bytes, BinaryIO], label: Optional[str] = None) -> dict:
        """Import an OCI image layout tar (the body is streamed)."""
        return self._t.request(
            "POST", self.path + "/import", body=archive, query={"label": label}, headers={"Content-Type": "application/x-tar"}
        )

    def logs(self, id: str) -> str:
        """The build's log as text."""
        out = self._t.request("GET", f"{self.path}/{quote(id)}/logs", raw=True)
        return out.decode("utf-8", "replace") if isinstance(out, bytes) else (out or "")

    def follow_logs(self, id: str) -> Iterator[str]:
        """The build's log lines as they are written, until the build ends."""
        resp = self._t.request("GET", f"{self.path}/{quote(id)}/logs", query={"follow": "1"}, stream=True, stream_types=TEXT_TYPES, timeout=None)
        with resp:
            for line in resp.iter_lines():
                yield line.decode("utf-8", "replace")

    def audit_log(self, id: str, limit: Optional[int] = None, offset: Optional[int] = None) -> dict:
        """A page of the build's audit log (its egress and outcome)."""
        return self._t.request("GET", f"{self.path}/{quote(id)}/log", query={"limit": limit, "offset": offset})


class SandboxPage(List[Sandbox]):
    """A page of :meth:`Sandboxes.list`: a list of sandboxes, with
    ``next_cursor``, the cursor of the next page (None on the last one)."""

    next_cursor: Optional[str] = None


class Sandboxes:
    """The account's sandboxes; each one is handled through a :class:`Sandbox`."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(
        self,
        label: Optional[str] = None,
        size: Optional[str] = None,
        storage_gb: Optional[float] = None,
        lifetime_minutes: Optional[int] = None,
        image_id: Optional[str] = None,
        volume_mounts: Optional[Dict[str, str]] = None,
        mcp_connection_names: Optional[List[str]] = None,
        secret_names: Optional[List[str]] = None,
        egress_hosts: Optional[List[str]] = None,
        auto_pause: Optional[bool] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> Sandbox:
        """Create a sandbox and return its handle, active and ready for calls."""
        body = _body(
            {
                "label": label,
                "size": size,
                "storage_gb": storage_gb,
                "lifetime_minutes": lifetime_minutes,
                "image_id": image_id,
                "volume_mounts": volume_mounts,
                "mcp_connection_names": mcp_connection_names,
                "secret_names": secret_names,
                "egress_hosts": egress_hosts,
                "auto_pause": auto_pause,
            }
        )
        data = self._t.request("POST", "/v1/sandboxes", json=body, idempotency_key=idempotency_key or new_idempotency_key())
        return Sandbox(self._t, data)

    def create_many(self, count: int, *, idempotency_key: Optional[str] = None, **fields: Any) -> List[Sandbox]:
        """Create count (1..10) sandboxes alike."""
        body = _body(dict(fields, count=count))
        data = self._t.request("POST", "/v1/sandboxes", json=body, idempotency_key=idempotency_key or new_idempotency_key())
        items = data if isinstance(data, list) else [data]
        return [Sandbox(self._t, d) for d in items]

    def list(self, active_only: bool = False, limit: Optional[int] = None, cursor: Optional[str] = None) -> "SandboxPage":
        """The account's sandboxes, newest first: all of them, or with limit
        (1..1000) one page of at most limit, continued by passing the
        page's ``next_cursor`` as cursor (None on the last page)."""
        query = {"active_only": True if active_only else None, "limit": limit, "cursor": cursor}
        data, headers = self._t.request("GET", "/v1/sandboxes", query=query, want_headers=True)
        page = SandboxPage(Sandbox(self._t, d) for d in data or [])
        if limit:
            page.next_cursor = next_cursor(headers)
        return page

    def all(self, active_only: bool = False, page_size: int = 100) -> Iterator[Sandbox]:
        """Every sandbox of the account, newest first, read page_size at a
        time (the list's Link: rel="next"; 0 or less: 100, as the Go
        client): a sandbox created meanwhile is not seen, and none is seen
        twice."""
        page_size = page_size if page_size > 0 else 100
        cursor: Optional[str] = None
        while True:
            page = self.list(active_only=active_only, limit=page_size, cursor=cursor)
            yield from page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get(self, id: str) -> Sandbox:
        return Sandbox(self._t, self._t.request("GET", f"/v1/sandboxes/{quote(id)}"))

    def bind(self, id: str) -> Sandbox:
        """A handle for a sandbox id, without a request."""
        return Sandbox(self._t, {"id": id})

    def delete(self, id: str) -> None:
        self._t.request("DELETE", f"/v1/sandboxes/{quote(id)}")


class Snapshots:
    """The account's snapshots (take one with Sandbox.snapshot): list, get,
    delete, and restore into a new sandbox."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def list(self, sandbox_id: Optional[str] = None) -> List[dict]:
        """The account's snapshots, newest first; of one sandbox with sandbox_id."""
        path = f"/v1/sandboxes/{quote(sandbox_id)}/snapshots" if sandbox_id else "/v1/snapshots"
        return self._t.request("GET", path) or []

    def get(self, id: str) -> dict:
        return self._t.request("GET", f"/v1/snapshots/{quote(id)}")

    def delete(self, id: str) -> None:
        """Delete a snapshot; sandboxes restored from it keep their files."""
        self._t.request("DELETE", f"/v1/snapshots/{quote(id)}")

    def restore(self, id: str, label: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Sandbox:
        """A new sandbox with the snapshot's files."""
        data = self._t.request(
            "POST",
            f"/v1/snapshots/{quote(id)}/restore",
            json=_body({"label": label}),
            idempotency_key=idempotency_key or new_idempotency_key(),
        )
        return Sandbox(self._t, data)


class Account:
    """The account behind the credential: settings, usage, allowlist, host."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def get(self) -> dict:
        return self._t.request("GET", "/v1/account")

    def me(self) -> dict:
        """The account of an access token (GET /v1/account/me)."""
        return self._t.request("GET", "/v1/account/me")

    def update(self, scrub_output: Optional[bool] = None) -> dict:
        return self._t.request("PATCH", "/v1/account", json=_body({"scrub_output": scrub_output}))

    def usage(self) -> dict:
        return self._t.request("GET", "/v1/usage")

    def host(self) -> dict:
        """The host's use of its limits (admin keys)."""
        return self._t.request("GET", "/v1/host")

    def allowed_commands(self) -> List[Any]:
        return (self._t.request("GET", "/v1/account/allowed-commands") or {}).get("rules") or []

    def set_allowed_commands(self, rules: List[Any]) -> List[Any]:
        return (self._t.request("PUT", "/v1/account/allowed-commands", json={"rules": rules}) or {}).get("rules") or []

    def clear_allowed_commands(self) -> None:
        self._t.request("DELETE", "/v1/account/allowed-commands")


class Boxkite:
    """A client of one boxkite control plane.

    ``base_url`` and ``api_key`` default to BOXKITE_BASE_URL and
    BOXKITE_API_KEY, then to what ``boxkite up`` wrote under ~/.boxkite.
    ``timeout`` bounds each wait for the server in seconds (exec calls add
    the command's own timeout); ``max_retries`` is how often a 429 or 503 is
    retried, after the server's Retry-After.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        user_agent: str = "",
    ) -> None:
        url, key = _config.resolve(base_url, api_key)
        self._t = Transport(url, key, timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait, user_agent=user_agent)
        self.sandboxes = Sandboxes(self._t)
        self.volumes = Volumes(self._t)
        self.images = Images(self._t)
        self.mcp_connections = MCPConnections(self._t)
        self.webhooks = Webhooks(self._t)
        self.api_keys = APIKeys(self._t)
        self.ssh_keys = SSHKeys(self._t)
        self.secrets = Secrets(self._t)
        self.snapshots = Snapshots(self._t)
        self.account = Account(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    @property
    def server_version(self) -> Optional[str]:
        """The Boxkite-Version the server last sent."""
        return self._t.server_version

    def health(self) -> dict:
        return self._t.request("GET", "/health", auth="")

    def ready(self) -> dict:
        return self._t.request("GET", "/health/ready", auth="")

    def sandbox(self, id: str) -> Sandbox:
        """A handle for sandbox id, without a request."""
        return self.sandboxes.bind(id)

    def signup(self, email: str, password: str) -> dict:
        """Create an account; the answer carries an access token."""
        return self._t.request("POST", "/v1/auth/signup", json={"email": email, "password": password}, auth="")

    def login(self, email: str, password: str) -> dict:
        return self._t.request("POST", "/v1/auth/login", json={"email": email, "password": password}, auth="")

    def bastion_takeover_token(self, sandbox_id: str, public_key: Optional[str] = None, token: Optional[str] = None) -> dict:
        """boxkite-bastion only: a takeover token for an SSH key's holder."""
        return self._t.request(
            "POST", "/v1/bastion/takeover-token", json=_body({"sandbox_id": sandbox_id, "public_key": public_key, "token": token})
        )
