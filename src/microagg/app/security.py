"""Only the app's own page drives it: ASGI middleware around the Shiny app.

The data loaded into ``microagg app`` are confidential. Three kinds of callers must not reach
them: a page on another site that rebinds its DNS name to 127.0.0.1 (DNS rebinding: its requests
carry its own ``Host``), a page on another site or another local port that opens the websocket or
posts an upload (cross-origin: its requests carry its ``Origin``), and another user or process of
this machine (no token). As Jupyter's server does:

* :class:`Gate` answers only requests whose ``Host`` names the server (its address or
  ``localhost`` with its port), whose ``Origin``, required on the websocket and on every request
  that is not a GET, is the page's own, that no other site initiated (``Sec-Fetch-Site``), and
  that carry the token: in the address first (``/?token=...``, then an HttpOnly SameSite=Strict
  cookie is set and the browser is sent to the clean address), in the cookie after. A refusal is
  a 400 or 403 with one line of text.
* :class:`UploadLimit` bounds the bytes a page's uploads hold, all uploads of the session
  together, by Content-Length before reading and by counting the bytes as they arrive (413).
* ``microagg.app.websocket.ShinyMessages`` checks the page's websocket messages before Shiny
  sees them: their shape, input types and values Shiny would fail on (a traceback on the
  server's stderr), inputs only the server sets (the uploaded files), and makes upload file
  names safe before any use.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import sys
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = [
    "Access",
    "Gate",
    "UploadBudget",
    "UploadLimit",
    "TOKEN_ENV",
    "check_token",
    "new_token",
]

TOKEN_ENV = (  # a token chosen by the caller (tests, scripts), instead of a random one
    "MICROAGG_APP_TOKEN"
)
_MIN_TOKEN = 16
_TOKEN_CHARS = re.compile(
    r"[A-Za-z0-9._~-]+"
)  # unreserved URL characters: the token travels in the address


def new_token() -> str:
    import secrets

    return secrets.token_urlsafe(32)


def check_token(token: str) -> str:
    """A token given by the user: long enough and safe in an address, else one InputError line."""
    from ..errors import InputError

    if len(token) < _MIN_TOKEN or not _TOKEN_CHARS.fullmatch(token):
        raise InputError(
            f"the app token must be at least {_MIN_TOKEN} characters among letters, digits and ."
            " _ ~ -"
        )
    return token


# ---------------------------------------------------------------------------- hosts and origins
def _host_and_port(authority: str, default_port: int = 80) -> tuple[str, int] | None:
    """('localhost', 8000) from 'localhost:8000', ('::1', 8000) from '[::1]:8000'; None if
    malformed."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        host, rest = authority[1:end], authority[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else ""
    elif authority.count(":") == 1:
        host, port_text = authority.split(":")
    elif ":" in authority:
        return None
    else:
        host, port_text = authority, ""
    if not host or any(ch in host for ch in "/?#@ \t"):
        return None
    if port_text:
        if not port_text.isdigit() or len(port_text) > 5:
            return None
        return host, int(port_text)
    return host, default_port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Access:
    """Who may drive the app: requests to one of ``hosts`` (or, served to other machines on a
    wildcard address, any IP address: an address cannot be a rebound name) on ``port``, carrying
    ``token``."""

    token: str
    port: int
    hosts: frozenset = field(default_factory=frozenset)
    any_ip: bool = False

    @classmethod
    def for_server(cls, host: str, port: int, token: str, allow_remote: bool) -> Access:
        names = {"localhost", "127.0.0.1", "::1", host.strip("[]").lower()}
        wildcard = host in ("0.0.0.0", "::", "")
        if allow_remote and wildcard:  # the names this machine goes by
            import socket

            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        return cls(token=token, port=port, hosts=frozenset(names), any_ip=allow_remote and wildcard)

    @property
    def cookie(self) -> str:
        # cookies are shared by every port of a host: one name per app, so two apps do not clash
        return f"microagg-app-{self.port}"

    def host_allowed(self, authority: str) -> bool:
        parsed = _host_and_port(authority)
        if parsed is None or parsed[1] != self.port:
            return False
        host = parsed[0]
        return host in self.hosts or (self.any_ip and _is_ip(host))

    def token_matches(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(
            value.encode("utf-8", "replace"), self.token.encode()
        )


# ---------------------------------------------------------------------------- ASGI helpers
def _headers(scope) -> dict:
    """Header name -> list of values (latin-1 text)."""
    out: dict = {}
    for name, value in scope.get("headers") or []:
        out.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return out


_SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]


async def _plain(send, status: int, text: str, extra=()) -> None:
    body = (text + "\n").encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *_SECURITY_HEADERS,
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refuse_websocket(receive, send) -> None:
    """Refuse a websocket handshake: a close before accepting, which the server answers with 403.
    (uvicorn's websocket denial response, which could carry the line, logs an error each time.)"""
    message = await receive()
    if message.get("type") == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


async def _login(send, cookie: str, clean: str) -> None:
    """The answer to the token in the address: the cookie, and a page that replaces itself (and the
    token in the address bar and history) with the clean address. The page's own navigation, not
    a 303: a redirect keeps the first request's initiator, so a login opened from elsewhere (the
    launcher file, a link) would reach the clean address as another site's request, without the
    SameSite=Strict cookie."""
    import html

    target, attribute = (
        json.dumps(clean),
        html.escape(clean),
    )  # (url-encoded already: no quote, no '<')
    body = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>microagg</title>'
        f'<meta http-equiv="refresh" content="0;url={attribute}"></head><body>'
        f"<script>window.location.replace({target});</script>"
        f'<p><a href="{attribute}">microagg app</a></p></body></html>\n'
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                (b"set-cookie", cookie.encode("latin-1")),
                *_SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _report(what: str, exc: BaseException) -> None:
    """One line on the server's stderr for a failure a request caused (never a traceback, never a
    path: the line names the exception's type only)."""
    print(f"microagg app: {what} ({type(exc).__name__})", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the gate
class Gate:
    """ASGI middleware: Host, Origin, Sec-Fetch-Site and the token, on every HTTP request and
    websocket; security headers on every answer; no traceback from the app reaches stderr."""

    def __init__(self, app, access: Access):
        self.app = app
        self.access = access

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal, login = self._check(scope)
        if refusal is not None:
            status, text = refusal
            if kind == "websocket":
                return await _refuse_websocket(receive, send)
            return await _plain(send, status, text)
        if login is not None:  # the token in the address: set the cookie, go to the clean address
            return await _login(
                send,
                f"{self.access.cookie}={self.access.token}; Path=/; HttpOnly; SameSite=Strict",
                login,
            )
        if kind == "websocket":
            return await self._guarded(scope, receive, send, "a websocket failed")
        started = False

        async def send_with_headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *_SECURITY_HEADERS]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # noqa: BLE001 - one line instead of uvicorn's traceback
            if (
                type(exc).__name__ == "ClientDisconnect"
            ):  # the client went away (a cut upload): nobody to tell
                return
            _report(f"a request failed: {scope.get('method', '')} answered 500", exc)
            if not started:
                await _plain(send, 500, "microagg app: internal error")

    async def _guarded(self, scope, receive, send, what: str):
        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # noqa: BLE001
            _report(what, exc)

    def _check(self, scope):
        """((status, line) of a refusal or None, the clean address to send a token login to or
        None)."""
        headers = _headers(scope)
        hosts = headers.get("host", [])
        if len(hosts) != 1 or not self.access.host_allowed(hosts[0]):
            return (
                400,
                (
                    "microagg app: refused: this address is not the app's (Host header); open the "
                    "address microagg app printed"
                ),
            ), None
        method = scope.get("method", "GET") if scope["type"] == "http" else "WEBSOCKET"
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True)
        given = [v for k, v in pairs if k == "token"]
        by_address = len(given) == 1 and self.access.token_matches(given[0])
        if given and not by_address:
            return (
                403,
                "microagg app: refused: wrong token; open the address microagg app printed",
            ), None
        fetch_site = headers.get("sec-fetch-site", [""])[-1].lower()
        login = by_address and method in ("GET", "HEAD") and scope.get("path") == "/"
        if fetch_site in ("cross-site", "same-site") and not login:
            return (403, "microagg app: refused: a request from another site"), None
        origins = headers.get("origin", [])
        if method not in ("GET", "HEAD") or origins:
            if len(origins) != 1 or not self._same_origin(origins[0], hosts[0]):
                return (
                    403,
                    "microagg app: refused: not a request of the app's page (Origin header)",
                ), None
        if login:
            rest = urlencode([(k, v) for k, v in pairs if k != "token"])
            return None, "/" + (f"?{rest}" if rest else "")
        if not (by_address or self._cookie_matches(headers.get("cookie", []))):
            return (
                403,
                (
                    "microagg app: refused: this page needs the app's token; open the address "
                    "microagg app printed (http://...?token=...)"
                ),
            ), None
        return None, None

    def _same_origin(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin.strip())
        if parts.scheme != "http" or not parts.netloc or parts.path not in ("", "/"):
            return False
        return _host_and_port(parts.netloc) == _host_and_port(host)

    def _cookie_matches(self, cookie_headers) -> bool:
        found = False
        for header in cookie_headers:
            for item in header.split(";"):
                name, _, value = item.strip().partition("=")
                if name == self.access.cookie:
                    found = self.access.token_matches(value) or found
        return found


# ---------------------------------------------------------------------------- uploads
class UploadBudget:
    """The bytes each session's uploads hold on disk (shared by :class:`UploadLimit`, which counts
    them in, and the page, which gives back the bytes of an upload it deletes). ``spare``: the
    bytes of the upload the page shows and no run uses, which the page deletes when another file
    arrives: a new upload may take their room (choosing another file is not refused)."""

    def __init__(self, limit: int):
        self.limit = int(limit)
        self._held: dict = {}
        self._spare: dict = {}
        self.posted: set = set()  # the upload paths already sent (an upload job takes one file)

    def held(self, session: str) -> int:
        return self._held.get(session, 0)

    def remaining(self, session: str) -> int:
        return max(self.limit - self.held(session) + self._spare.get(session, 0), 0)

    def add(self, session: str, n: int) -> None:
        self._held[session] = self.held(session) + int(n)

    def release(self, session: str, n: int) -> None:
        self._held[session] = max(self.held(session) - int(n), 0)

    def set_spare(self, session: str, n: int) -> None:
        self._spare[session] = min(int(n), self.held(session))

    def forget(self, session: str) -> None:
        self._held.pop(session, None)
        self._spare.pop(session, None)

    def refusal(self, session: str) -> str:
        kept = self.held(session) - self._spare.get(session, 0)
        text = f"the file is larger than the upload limit of {_mb(self.limit)} MB"
        if kept > 0:
            text += (
                f" with this page's earlier uploads ({_mb(kept)} MB kept for its runs); reload the"
                " page to start afresh"
            )
        return text


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.4g}"  # 0.02 for --max-upload-mb 0.02 (20,971 bytes)


_UPLOAD_PATH = re.compile(r"/session/([^/]+)/upload/")


class _OverLimit(Exception):
    pass


class UploadLimit:
    """ASGI middleware: an upload is refused (413, one line) when it would take its session's
    uploads past the limit: by its Content-Length before any byte is read, else (chunked) as its
    bytes arrive: the app gets no byte past the limit, and the client the 413, not a 500."""

    def __init__(self, app, budget: UploadBudget):
        self.app = app
        self.budget = budget

    async def __call__(self, scope, receive, send):
        match = _UPLOAD_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        session = match.group(1)
        if (
            scope["path"] in self.budget.posted
        ):  # Shiny would fail (a 500) on a second file for one job
            return await _plain(send, 409, "microagg app: this upload was sent already")
        self.budget.posted.add(scope["path"])
        remaining = self.budget.remaining(session)
        lengths = _headers(scope).get("content-length", [])
        try:
            declared = int(lengths[0]) if len(lengths) == 1 else None
        except ValueError:
            declared = None
        if declared is not None and declared > remaining:
            return await _plain(send, 413, self.budget.refusal(session))
        received, over, started = 0, False, False

        async def counting_receive():
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                size = len(message.get("body", b""))
                if received + size > remaining:
                    over = True
                    raise _OverLimit
                received += size
            return message

        async def quiet_send(message):
            nonlocal started
            if over:  # the app's answer to the cut request (an error) is replaced by the 413
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, quiet_send)
        except Exception:  # noqa: BLE001 - the cut upload, or the app's failure on it
            if not over:
                self.budget.add(session, received)
                raise
        self.budget.add(
            session, received
        )  # on disk (part of a file, if cut) until the session ends
        if over and not started:
            await _plain(send, 413, self.budget.refusal(session))
