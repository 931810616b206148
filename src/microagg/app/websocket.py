"""The page's websocket messages, checked before Shiny reads them: ASGI middleware around the
Shiny app (the third layer of ``microagg.app.security``'s defences).

A message Shiny would fail on, with a traceback on the server's stderr, ends the connection, and
so does one that sets an input only the server sets (the uploaded files). Upload file names are
made safe before any use (:func:`safe_file_name`).
"""

from __future__ import annotations

import contextlib
import json
import re
import unicodedata

__all__ = ["ShinyMessages", "safe_file_name"]

_FILE_NAME_BYTES = 100
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\/]')


def safe_file_name(name, suffixes=(), options: bool = False) -> str:
    """A name safe to use as a file name and in a command line: the last part of a path, without
    control characters (NUL included), characters Windows refuses, leading '-' (an option) or
    '.' ('..', a hidden file), at most 100 bytes of UTF-8 with its suffix kept (``suffixes``:
    the known compound ones, such as '.csv.gz'). An empty result is 'upload' with the suffix.
    ``options``: a leading '-' is kept (the name the user's own file has, shown in a command
    line, which guards it as './-name')."""
    text = unicodedata.normalize("NFC", str(name))
    text = re.split(r"[/\\]", text)[-1]
    text = _UNSAFE_NAME.sub("_", "".join(ch for ch in text if ch.isprintable() or ch == " "))
    text = text.strip().lstrip(". " if options else "-. ").strip()
    lower = text.lower()
    known = next((s for s in sorted(suffixes, key=len, reverse=True) if lower.endswith(s)), "")
    suffix = text[len(text) - len(known) :] if known else ""  # as the user wrote it (.CSV.GZ)
    if not suffix and "." in text.rstrip("."):
        suffix = "." + text.rsplit(".", 1)[1]
    suffix = suffix[:20] if len(suffix.encode()) <= 20 else ""
    stem = text[: len(text) - len(suffix)] if suffix else text
    budget = _FILE_NAME_BYTES - len(suffix.encode())
    stem = stem.encode("utf-8")[:budget].decode("utf-8", "ignore").rstrip(". ")
    return (stem or "upload") + suffix


class _Refused(Exception):
    pass


class ShinyMessages:
    """ASGI middleware on the websocket: each message the page sends is checked before Shiny reads
    it. A message Shiny would fail on with a traceback on the server's stderr (not JSON, a message
    before "init" or a second "init", an input name with two ':', an input type the page does not
    use, an action count that is not a count, the end of an upload Shiny did not start), an input
    only the server sets (``file_inputs``: set by a finished upload, never by the page) or an
    upload of several files ends the connection (1008). Upload file names are made safe
    (:func:`safe_file_name`); a changed one is marked ``name_changed``."""

    _TYPES = ("shiny.action", "shiny.number")

    def __init__(self, app, file_inputs=("upload",), suffixes=()):
        self.app = app
        self.file_inputs = frozenset(file_inputs)
        self.suffixes = tuple(suffixes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        closed = False
        state = {"started": False, "jobs": set()}  # "init" seen; the uploads Shiny started

        async def checked_receive():
            nonlocal closed
            if closed:  # the close this middleware sent ends the conversation
                return {"type": "websocket.disconnect", "code": 1008}
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            try:
                text = self._checked(message.get("text"), state)
            except _Refused:
                closed = True
                await send({"type": "websocket.close", "code": 1008})
                return {"type": "websocket.disconnect", "code": 1008}
            return {**message, "text": text}

        async def quiet_send(message):
            if closed:  # nothing after the close this middleware sent
                return
            text = message.get("text") if message["type"] == "websocket.send" else None
            if (
                text and '"jobId"' in text
            ):  # Shiny's answer to an uploadInit: the job its uploadEnd names
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    state["jobs"].add(json.loads(text)["response"]["value"]["jobId"])
            await send(message)

        await self.app(scope, checked_receive, quiet_send)

    def _checked(self, text, state) -> str:
        if not isinstance(text, str):
            raise _Refused
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            raise _Refused from None
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            raise _Refused
        method = message["method"]
        if (method == "init") == state["started"]:  # "init" first and once
            raise _Refused
        state["started"] = True
        changed = False
        if method in ("init", "update"):
            data = message.get("data")
            if not isinstance(data, dict):
                raise _Refused
            for key in list(data):
                name, _, kind = key.partition(":")
                if name in self.file_inputs:  # the page says only "no file yet"; an upload sets it
                    if data[key] is not None:
                        raise _Refused
                    continue
                if ":" in kind or (kind and kind not in self._TYPES):
                    raise _Refused
                if kind in ("shiny.action",) and not (type(data[key]) is int and data[key] >= 0):
                    raise _Refused
        elif "tag" in message or "args" in message:
            if not isinstance(message.get("args"), list):
                raise _Refused
            if method == "uploadInit":
                changed = self._check_upload_init(message["args"])
            elif method == "uploadEnd":
                args = message["args"]
                if (
                    len(args) != 2
                    or not all(isinstance(a, str) for a in args)
                    or args[1] not in self.file_inputs
                    or args[0] not in state["jobs"]
                ):
                    raise _Refused
                state["jobs"].discard(args[0])
        else:
            raise _Refused
        return json.dumps(message) if changed else text

    def _check_upload_init(self, args) -> bool:
        if len(args) != 1 or not isinstance(args[0], list) or len(args[0]) != 1:
            raise _Refused
        info = args[0][0]
        if not (
            isinstance(info, dict)
            and isinstance(info.get("name"), str)
            and type(info.get("size")) is int
            and info["size"] >= 0
            and isinstance(info.get("type", ""), str)
        ):
            raise _Refused
        safe = safe_file_name(info["name"], self.suffixes)
        info["type"] = info.get("type", "")[:100]
        if safe != info["name"]:
            shown = safe_file_name(info["name"], self.suffixes, options=True)
            info["name"], info["name_changed"] = safe, True
            if shown != safe:  # '-data.csv': kept on the server as 'data.csv', shown as it is
                info["shown_name"] = shown
        return True
