"""Where the client finds its server and key when none is passed."""

from __future__ import annotations

import os
from typing import Optional, Tuple

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None  # type: ignore[assignment]


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    if tomllib is not None:
        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return {}
    out = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        value = value.strip()
        if sep and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            out[key.strip()] = value[1:-1]
    return out


def resolve(base_url: Optional[str], api_key: Optional[str]) -> Tuple[str, str]:
    """The server URL and API key: the arguments, else BOXKITE_BASE_URL and
    BOXKITE_API_KEY, else the CLI's files under BOXKITE_HOME (~/.boxkite):
    config.toml when it names both, else local.toml, which `boxkite up`
    writes."""
    url = base_url or os.environ.get("BOXKITE_BASE_URL") or ""
    key = api_key or os.environ.get("BOXKITE_API_KEY") or ""
    if url and key:
        return url, key
    home = os.environ.get("BOXKITE_HOME") or os.path.join(os.path.expanduser("~"), ".boxkite")
    hosted = _read(os.path.join(home, "config.toml"))
    files = hosted if hosted.get("base_url") and hosted.get("api_key") else _read(os.path.join(home, "local.toml"))
    return url or files.get("base_url") or "http://127.0.0.1:8090", key or files.get("api_key") or ""
