"""Agent tools over a sandbox, in the shapes model APIs take.

The tool definitions (names, descriptions, JSON Schemas) are those of
boxkite's own agent tools (`boxkite tools export`), generated into
tooldefs.json. :func:`to_openai_tools` and :func:`to_anthropic_tools` render
them for OpenAI's Chat Completions and Responses APIs and Anthropic's
Messages API; :func:`run_tool` runs a call against a sandbox and returns the
text to send back. Refusals of the API come back as text an agent can act
on (``Error [code]: …`` / ``Hint: …``), never as exceptions.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Union

from .errors import BoxkiteError

with open(os.path.join(os.path.dirname(__file__), "tooldefs.json"), encoding="utf-8") as _f:
    TOOL_DEFINITIONS: List[Dict[str, Any]] = json.load(_f)

TOOL_NAMES = [d["name"] for d in TOOL_DEFINITIONS]


def _select(names: Optional[List[str]]) -> List[Dict[str, Any]]:
    if names is None:
        return TOOL_DEFINITIONS
    unknown = sorted(set(names) - set(TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown tools {unknown}; known: {TOOL_NAMES}")
    return [d for d in TOOL_DEFINITIONS if d["name"] in names]


def to_openai_tools(names: Optional[List[str]] = None, api: str = "chat") -> List[Dict[str, Any]]:
    """The tools for OpenAI: ``api="chat"`` gives Chat Completions'
    ``{"type": "function", "function": {name, description, parameters}}``;
    ``api="responses"`` gives the Responses API's flat
    ``{"type": "function", name, description, parameters, "strict": False}``."""
    out = []
    for d in _select(names):
        if api == "responses":
            out.append({"type": "function", "name": d["name"], "description": d["description"], "parameters": d["parameters"], "strict": False})
        elif api == "chat":
            out.append({"type": "function", "function": {"name": d["name"], "description": d["description"], "parameters": d["parameters"]}})
        else:
            raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    return out


def to_anthropic_tools(names: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """The tools for Anthropic's Messages API: ``{name, description, input_schema}``."""
    return [{"name": d["name"], "description": d["description"], "input_schema": d["parameters"]} for d in _select(names)]


def _combine(stdout: str, stderr: str) -> str:
    out = stdout.rstrip("\n")
    err = stderr.rstrip("\n")
    if err:
        out = out + "\n" + err if out else err
    return out


def _truncated_note(res: Dict[str, Any]) -> str:
    # Without it, output cut at the server's cap reads like the command's end.
    if not res.get("truncated"):
        return ""
    return (
        f"\n\n(output truncated: the command wrote {res.get('stdout_bytes', 0)} bytes to stdout and {res.get('stderr_bytes', 0)} to stderr; "
        f"only the first {res.get('output_limit_bytes', 0)} bytes of each are shown. Redirect the output to a file and read it with view or grep.)"
    )


def _exec_text(res: Dict[str, Any]) -> str:
    out = _combine(res.get("stdout", ""), res.get("stderr", ""))
    code = res.get("exit_code", 0)
    if code == 0:
        if not out and not res.get("truncated"):
            return "(command completed with no output)"
        return out + _truncated_note(res)
    return f"Error (exit code {code}):\n{out or '(no output)'}" + _truncated_note(res)


def _view_text(sb: Any, path: str, start: int, end: Optional[int]) -> str:
    start = max(int(start or 1), 1)
    if end is None:
        end = start + 99
    if end < -1 or end == 0:
        end = -1
    if end != -1 and end < start:
        return f"Error: end_line {end} is before start_line {start}"
    res = sb.files.view(path, view_range=[start, end])
    if res.get("is_directory"):
        entries = res.get("entries") or []
        return f"Directory: {path}\n\n" + ("\n".join(entries) if entries else "(empty)")
    lines = res.get("lines", 0)
    if lines == 0:
        return "File is empty: " + path
    if start > lines:
        return f"Error: start_line {start} is past the end of {path} ({lines} lines)"
    last = lines if end == -1 or end > lines else end
    body = [f"File: {path} (lines {start}-{last} of {lines})"]
    for i, line in enumerate(res.get("content", "").split("\n")):
        body.append(f"{start + i:6d}\t{line}")
    return "\n".join(body)


def _check_args(name: str, args: Any) -> str:
    """The text telling the agent what is wrong with args for tool name, or
    "" when they fit its schema, in the words of boxkite's Go tools (and so
    of the MCP servers): an object, no unknown parameter, every required one
    present and not null. (A model that writes file_create's content as
    file_text, as Anthropic's own editor tool names it, is told so instead
    of getting an empty file.)"""
    if not isinstance(args, dict):
        return f"Error: the arguments of {name} must be a JSON object"
    schema = next((d["parameters"] for d in TOOL_DEFINITIONS if d["name"] == name), None)
    if schema is None:
        return ""
    props = schema.get("properties", {})
    names = sorted(props)
    unknown = sorted(k for k in args if k not in props)
    if unknown and not schema.get("additionalProperties"):
        if not names:
            return f"Error: {name} takes no parameters; got {_quote_list(unknown)}"
        return f"Error: {name} has no parameter {_quote_list(unknown)}; its parameters are {', '.join(names)}"
    missing = [r for r in schema.get("required", []) if args.get(r) is None]
    if missing:
        return f"Error: {name} needs the parameter {_quote_list(missing)}"
    return ""


def _quote_list(names: List[str]) -> str:
    return ", ".join(json.dumps(n, ensure_ascii=False) for n in names)


# A hint of the API's names boxkite CLI commands, which an agent calling
# these tools cannot run. As boxkite's Go tools (tools/hints.go) do for the
# tools an agent has: a command one of them does the same as becomes that
# tool, and an aside or a "; "-separated clause that still names a command
# is left out (the hint too, when nothing of it is left).
_CLI_COMMAND = re.compile(r"[`'(]boxkite [a-z]")
_CLI_ASIDE = re.compile(r" ?\([^()]*[`'(]boxkite [a-z][^()]*\)")
_AS_TOOL = [
    (re.compile(r"raise the limit \(boxkite doctor says how\)"), "ask the server's operator to raise the limit"),
    (re.compile(r"[`']boxkite files view PATH[`']"), "`view`"),
]


def _names_command(s: str) -> bool:
    return bool(_CLI_COMMAND.search(s)) or "boxkite doctor" in s


def _agent_hint(code: str, hint: str) -> str:
    if code == "bad_response" or not _names_command(hint):
        return hint
    for cli, tool in _AS_TOOL:
        hint = cli.sub(tool, hint)
    if not _names_command(hint):
        return hint
    hint = _CLI_ASIDE.sub("", hint)
    return "; ".join(c for c in hint.split("; ") if not _names_command(c)).strip()


def run_tool(sandbox: Any, name: str, arguments: Union[str, Dict[str, Any], None]) -> str:
    """Run tool call name with arguments (a dict or its JSON text) in
    sandbox; return the text for the model. Arguments that do not fit the
    tool's schema (an unknown or a missing parameter) are refused with the text boxkite's MCP servers give, before
    anything reaches the sandbox."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else (arguments if arguments is not None else {})
    except ValueError as e:
        return f"Error: the arguments of {name} are not JSON: {e}"
    if args is None:
        args = {}
    msg = _check_args(name, args)
    if msg:
        return msg
    try:
        if name == "bash_tool":
            command = str(args.get("command") or "")
            if not command.strip():
                return "Error: command must not be empty"
            timeout = args.get("timeout")
            timeout = 120 if timeout is None else timeout
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 600 or timeout != int(timeout):
                # As the REST API and boxkite's Go tools: refused, not clamped.
                return f"Error: timeout must be between 1 and 600 seconds, got {timeout}\nHint: omit timeout for the default of 120 seconds."
            return _exec_text(sandbox.exec(command, timeout=int(timeout)))
        if name == "file_create":
            path = str(args.get("path") or "")
            if not path.strip():
                return "Error: path must not be empty"
            res = sandbox.files.write(path, str(args.get("content") or ""))
            return f"Created file: {res.get('path') or path} ({res.get('size', 0)} bytes)"
        if name == "view":
            path = str(args.get("path") or "")
            if not path.strip():
                return "Error: path must not be empty"
            return _view_text(sandbox, path, args.get("start_line", 1), args.get("end_line"))
        if name == "str_replace":
            path, old, new = str(args.get("path") or ""), str(args.get("old_str") or ""), str(args.get("new_str") or "")
            if not path.strip():
                return "Error: path must not be empty"
            if not old:
                return "Error: old_str must not be empty"
            res = sandbox.files.str_replace(path, old, new)
            p = res.get("path") or path
            n = res.get("occurrences", 0)
            if not res.get("replaced") or n == 0:
                return f"Error: old_str not found in {p}\nHint: view the file and copy the exact text, including whitespace and indentation."
            return f"Replaced {n} occurrence{'s' if n != 1 else ''} in {p}"
    except BoxkiteError as e:
        # As boxkite's own tools: the refusal's stable code in brackets.
        text = (f"Error [{e.code}]: " if e.code else "Error: ") + e.message
        hint = _agent_hint(e.code, e.hint or "")
        return text + ("\nHint: " + hint if hint else "")
    return f"Error: unknown tool {name!r}; known: {', '.join(TOOL_NAMES)}"
