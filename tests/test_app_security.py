"""The app keeps confidential data local (issue 31): only its own page drives it, uploads are
bounded, nothing outlives it, no client input puts a traceback on the server's stderr.

Three layers: the ASGI middleware (``microagg.app.security``) with raw ASGI scopes; a real
``microagg app`` driven with http.client and a websocket client speaking Shiny's protocol (as a
hostile page or process would); and the run processes, killed with the app during their imports.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.client
import itertools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_app import running_app

import microagg
import microagg.report_columns as report_module
from microagg.app import (
    figures,
    input_data,
    private,
    run_handle,
    runspec,
    security,
    websocket,
)

SRC = Path(__file__).resolve().parents[1] / "src"
TOKEN = "test-token-0123456789abcdef"
PORT = 18765


# ---------------------------------------------------------------------------- the middleware, raw
# ASGI
def _scope(kind="http", method="GET", path="/", query=b"", host=f"127.0.0.1:{PORT}", headers=()):
    head = [] if host is None else [(b"host", host.encode())]
    head += [(k.encode(), v.encode()) for k, v in headers]
    scope = {"type": kind, "path": path, "query_string": query, "headers": head}
    if kind == "http":
        scope["method"] = method
    return scope


COOKIE = ("cookie", f"other=1; microagg-app-{PORT}={TOKEN}")
OWN = ("origin", f"http://127.0.0.1:{PORT}")


class Inner:
    """The wrapped app: records what reaches it and answers 200 (or a websocket accept)."""

    def __init__(self, fail: bool = False):
        self.calls, self.fail = [], fail

    async def __call__(self, scope, receive, send):
        self.calls.append(scope["path"])
        if self.fail:
            raise KeyError("a bug of the app's")
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


def _run(app, scope, incoming=None):
    """Run ``app`` on ``scope``; returns the messages it sent."""
    if incoming is None:
        incoming = (
            [{"type": "http.request", "body": b""}]
            if scope["type"] == "http"
            else [{"type": "websocket.connect"}]
        )
    incoming = list(incoming)
    sent = []

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _gate(inner=None, host="127.0.0.1", allow_remote=False):
    inner = inner or Inner()
    return security.Gate(inner, security.Access.for_server(host, PORT, TOKEN, allow_remote)), inner


def _status(sent) -> int:
    return sent[0]["status"]


def _body(sent) -> str:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def _header(sent, name: bytes):
    return [v.decode() for k, v in sent[0]["headers"] if k == name]


def test_a_foreign_host_is_refused_even_with_the_token():
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends its own
    Host."""
    for host in (
        f"evil.example:{PORT}",
        f"127.0.0.1:{PORT + 1}",
        f"127.0.0.1.nip.io:{PORT}",
        f"localhost.:{PORT}",
        "127.0.0.1",
        f"[::1]x:{PORT}",
        f"user@127.0.0.1:{PORT}",
        "",
        None,
    ):
        gate, inner = _gate()
        sent = _run(gate, _scope(host=host, query=f"token={TOKEN}".encode(), headers=[COOKIE]))
        assert _status(sent) == 400 and not inner.calls, host
        assert _body(sent).count("\n") == 1 and "Host" in _body(sent)
        ws = _run(gate, _scope("websocket", path="/websocket/", host=host, headers=[COOKIE, OWN]))
        assert ws == [{"type": "websocket.close", "code": 1008}] and not inner.calls, host
    gate, inner = _gate()
    two = _scope(headers=[COOKIE, ("host", "evil.example")])
    assert _status(_run(gate, two)) == 400 and not inner.calls
    for host in (f"127.0.0.1:{PORT}", f"LOCALHOST:{PORT}", f"[::1]:{PORT}"):
        assert _status(_run(gate, _scope(host=host, headers=[COOKIE]))) == 200
    assert len(inner.calls) == 3


def test_the_token_logs_in_once_then_the_cookie_carries_it():
    gate, inner = _gate()
    for query, headers in (
        (b"", ()),
        (b"token=wrong", ()),
        (b"", [("cookie", f"microagg-app-{PORT}=wrong")]),
        (b"", [("cookie", f"microagg-app-{PORT + 1}={TOKEN}")]),  # another app's cookie
        (f"token={TOKEN}&token=x".encode(), ()),
    ):
        sent = _run(gate, _scope(query=query, headers=headers))
        assert _status(sent) == 403 and "token" in _body(sent) and _body(sent).count("\n") == 1, (
            query
        )
    assert not inner.calls
    sent = _run(gate, _scope(query=f"token={TOKEN}&x=1".encode()))
    # the page replaces itself with the clean address: the token leaves the address bar and history
    assert _status(sent) == 200 and 'window.location.replace("/?x=1")' in _body(sent)
    assert TOKEN not in _body(sent)
    (cookie,) = _header(sent, b"set-cookie")
    assert cookie.startswith(f"microagg-app-{PORT}={TOKEN};")
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in cookie.split(";")}
    assert not inner.calls
    assert _status(_run(gate, _scope(path="/lib/shiny.js", headers=[COOKIE]))) == 200
    assert (
        _status(_run(gate, _scope(path="/session/x/download/y", query=f"token={TOKEN}".encode())))
        == 200
    )
    assert inner.calls == ["/lib/shiny.js", "/session/x/download/y"]
    sent = _run(
        gate, _scope(headers=[COOKIE])
    )  # every answer says: no framing, no referrer, no sniffing
    assert _header(sent, b"x-frame-options") == ["DENY"] and _header(sent, b"referrer-policy") == [
        "no-referrer"
    ]


def test_the_websocket_and_posts_need_the_pages_own_origin():
    gate, inner = _gate()
    for origin in (
        None,
        "http://evil.example",
        f"http://127.0.0.1:{PORT + 1}",
        "null",
        f"https://127.0.0.1:{PORT}",
        f"http://localhost:{PORT}",
        f"http://127.0.0.1:{PORT}/path",
    ):
        headers = [COOKIE] + ([("origin", origin)] if origin else [])
        assert _run(gate, _scope("websocket", path="/websocket/", headers=headers)) == [
            {"type": "websocket.close", "code": 1008}
        ], origin
        sent = _run(gate, _scope(method="POST", path="/session/s/upload/j", headers=headers))
        assert _status(sent) == 403 and _body(sent).count("\n") == 1, origin
    if True:  # a GET carrying a foreign Origin (fetch from another page) is refused too
        assert (
            _status(
                _run(
                    gate,
                    _scope(
                        path="/session/s/download/d",
                        headers=[COOKIE, ("origin", "http://evil.example")],
                    ),
                )
            )
            == 403
        )
    assert not inner.calls
    assert (
        _run(gate, _scope("websocket", path="/websocket/", headers=[COOKIE, OWN]))[0]["type"]
        == "websocket.accept"
    )
    assert (
        _status(
            _run(gate, _scope(method="POST", path="/session/s/upload/j", headers=[COOKIE, OWN]))
        )
        == 200
    )
    no_cookie = _run(gate, _scope("websocket", path="/websocket/", headers=[OWN]))
    assert no_cookie == [{"type": "websocket.close", "code": 1008}]
    assert len(inner.calls) == 2


def test_requests_another_site_started_are_refused():
    gate, inner = _gate()
    for site in ("cross-site", "same-site"):  # same-site: another port of 127.0.0.1
        sent = _run(
            gate, _scope(path="/session/s/download/d", headers=[COOKIE, ("sec-fetch-site", site)])
        )
        assert _status(sent) == 403, site
    assert not inner.calls
    for site in ("same-origin", "none"):
        assert _status(_run(gate, _scope(headers=[COOKIE, ("sec-fetch-site", site)]))) == 200
    # the printed address opened from a link elsewhere still logs in (the token is the proof)
    login = _run(
        gate, _scope(query=f"token={TOKEN}".encode(), headers=[("sec-fetch-site", "cross-site")])
    )
    assert _status(login) == 200 and _header(login, b"set-cookie")


def test_serving_other_machines_keeps_the_token_and_refuses_names():
    gate, inner = _gate(host="0.0.0.0", allow_remote=True)
    for host in (f"192.168.1.5:{PORT}", f"[fe80::1]:{PORT}", f"{socket.gethostname()}:{PORT}"):
        assert _status(_run(gate, _scope(host=host))) == 403  # no token
        assert _status(_run(gate, _scope(host=host, headers=[COOKIE]))) == 200
    assert _status(_run(gate, _scope(host=f"evil.example:{PORT}", headers=[COOKIE]))) == 400


def test_an_app_failure_is_one_line_and_no_traceback(capsys):
    gate, _ = _gate(Inner(fail=True))
    sent = _run(gate, _scope(headers=[COOKIE]))
    assert _status(sent) == 500 and _body(sent) == "microagg app: internal error\n"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "KeyError" in err

    from starlette.requests import ClientDisconnect

    async def gone(scope, receive, send):  # a client that left during its upload: nothing to say
        raise ClientDisconnect()

    assert (
        _run(
            security.Gate(gone, security.Access.for_server("127.0.0.1", PORT, TOKEN, False)),
            _scope(method="POST", path="/session/s/upload/j", headers=[COOKIE, OWN]),
        )
        == []
    )
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------- upload bounds
class Uploads:
    """An app that stores what it receives, as Shiny's upload handler does, and fails like
    Starlette (a 500) when the request breaks off."""

    def __init__(self):
        self.stored = 0

    async def __call__(self, scope, receive, send):
        try:
            while True:
                message = await receive()
                self.stored += len(message.get("body", b""))
                if not message.get("more_body"):
                    break
        except Exception:
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b"Internal Server Error"})
            raise
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"OK"})


_JOBS = itertools.count()


def _post(app, session, body: bytes, declared=True, chunk=4, job=None):
    headers = (
        [("content-length", str(len(body)))] if declared else [("transfer-encoding", "chunked")]
    )
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    incoming = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]
    path = f"/session/{session}/upload/{job or next(_JOBS)}"
    return _run(app, _scope(method="POST", path=path, headers=headers), incoming)


def test_the_limit_is_the_sessions_total_not_each_requests():
    budget = security.UploadBudget(10)
    inner = Uploads()
    app = security.UploadLimit(inner, budget)
    assert _status(_post(app, "s1", b"123456")) == 200
    second = _post(app, "s1", b"abcdef")  # 12 bytes in all: refused before a byte is read
    assert _status(second) == 413 and "earlier uploads" in _body(second) and inner.stored == 6
    assert _status(_post(app, "s2", b"abcdef")) == 200  # another page has its own
    budget.set_spare("s1", 6)  # the page will delete its shown, unused upload when another arrives
    assert _status(_post(app, "s1", b"abcdef")) == 200
    budget.release("s1", 6)
    budget.set_spare("s1", 0)
    assert budget.held("s1") == 6
    budget.forget("s1")
    assert budget.held("s1") == 0
    assert _status(_post(app, "s3", b"1", job="once")) == 200
    again = _post(
        app, "s3", b"1", job="once"
    )  # a job takes one file: Shiny would answer a second with a 500
    assert _status(again) == 409 and _body(again).count("\n") == 1


def test_a_chunked_upload_over_the_limit_gets_413_not_500():
    budget = security.UploadBudget(10)
    inner = Uploads()
    sent = _post(security.UploadLimit(inner, budget), "s", b"x" * 12, declared=False)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413]
    assert _body(sent).startswith("the file is larger than the upload limit") and inner.stored <= 10
    assert budget.held("s") == inner.stored  # what reached the disk counts until the page ends


# ---------------------------------------------------------------------------- websocket messages
def _through(messages, file_inputs=("upload",)):
    """Send ``messages`` (texts) through ShinyMessages; returns (what Shiny read, what was sent)."""
    read = []

    async def shiny(scope, receive, send):
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            read.append(message)
            if message["type"] == "websocket.disconnect":
                await send({"type": "websocket.send", "text": "after the close"})
                return
            if '"uploadInit"' in message["text"]:  # Shiny starts the upload job the page then ends
                tag = json.loads(message["text"])["tag"]
                await send(
                    {
                        "type": "websocket.send",
                        "text": json.dumps(
                            {
                                "response": {
                                    "tag": tag,
                                    "value": {"jobId": "job", "uploadUrl": "session/s/upload/job"},
                                }
                            }
                        ),
                    }
                )

    incoming = [{"type": "websocket.connect"}]
    incoming += [
        {"type": "websocket.receive", **({"bytes": m} if isinstance(m, bytes) else {"text": m})}
        for m in messages
    ]
    incoming.append({"type": "websocket.disconnect", "code": 1000})
    sent = _run(
        websocket.ShinyMessages(shiny, file_inputs, input_data.read_suffixes()),
        _scope("websocket", path="/websocket/"),
        incoming,
    )
    return read, sent


INIT = json.dumps({"method": "init", "data": {"upload:shiny.file": None}})


def _upload_init(*names):
    return json.dumps(
        {
            "method": "uploadInit",
            "tag": 1,
            "args": [[{"name": n, "size": 10, "type": "text/csv"} for n in names]],
        }
    )


def test_upload_names_are_made_safe_before_shiny_sees_them():
    hostile = [
        "..",
        "a\x00b.csv",
        "é" * 150 + ".csv",
        "-data.csv",
        "../../etc/passwd.csv",
        "x." + "ü" * 150,
        "survey.CSV.GZ",
        ".hidden.parquet",
        "C:\\Users\\me\\data.xlsx",
        "ok data.csv",
    ]
    read, _ = _through([INIT] + [_upload_init(n) for n in hostile])
    infos = [json.loads(m["text"])["args"][0][0] for m in read[1:-1]]
    names = [i["name"] for i in infos]
    assert names[0] == "upload" and names[1] == "ab.csv" and names[3] == "data.csv"
    assert names[4] == "passwd.csv" and names[6] == "survey.CSV.GZ" and names[7] == "hidden.parquet"
    assert names[8] == "data.xlsx" and names[9] == "ok data.csv"
    assert names[2].endswith(".csv") and len(names[2].encode()) <= 100 and names[2].startswith("é")
    assert len(names[5].encode()) <= 100
    assert infos[3]["shown_name"] == "-data.csv"  # the user's own name, for the commands shown
    for info, original in zip(infos, hostile):
        assert info.get("name_changed", False) == (info["name"] != original)
        assert (
            "\x00" not in info["name"]
            and "/" not in info["name"]
            and not info["name"].startswith(("-", "."))
        )


@pytest.mark.parametrize(
    "message",
    [
        "not json",
        '["a list"]',
        b"binary",
        json.dumps({"method": "update", "data": {"a:shiny.number:x": 1}}),
        json.dumps(
            {"method": "update", "data": {"upload": [{"name": "x.csv", "datapath": "/etc/passwd"}]}}
        ),
        json.dumps(
            {"method": "update", "data": {"upload:shiny.file": {"name": ["x"], "datapath": ["y"]}}}
        ),
        json.dumps({"method": "update", "data": {"run:shiny.action": "1"}}),
        json.dumps({"method": "update", "data": {"run:shiny.action": -1}}),
        json.dumps({"method": "update", "data": {"x:shiny.password": "a"}}),
        json.dumps({"method": "update", "data": {"x:shiny.date": "not a date"}}),
        json.dumps({"method": "update", "data": ["no", "object"]}),
        json.dumps(
            {
                "method": "uploadInit",
                "tag": 1,
                "args": [[{"name": "a.csv", "size": 1, "type": ""}] * 2],
            }
        ),
        json.dumps(
            {"method": "uploadInit", "tag": 1, "args": [[{"name": 7, "size": 1, "type": ""}]]}
        ),
        json.dumps(
            {
                "method": "uploadInit",
                "tag": 1,
                "args": [[{"name": "a.csv", "size": -1, "type": ""}]],
            }
        ),
        json.dumps({"method": "uploadEnd", "tag": 2, "args": ["job", "columns"]}),
        json.dumps({"method": "uploadEnd", "tag": 2, "args": ["no-such-job", "upload"]}),
        json.dumps({"method": "nothing"}),
        INIT,  # a second init
        "[" * 100_000 + "]" * 100_000,  # deeper than the JSON parser goes
    ],
)
def test_messages_shiny_would_fail_on_end_the_connection(message):
    read, sent = _through([INIT, message, json.dumps({"method": "update", "data": {"k": 1}})])
    assert read[1:] == [
        {"type": "websocket.disconnect", "code": 1008}
    ]  # the next message is not read either
    assert {"type": "websocket.close", "code": 1008} in sent
    assert not any(m["type"] == "websocket.send" for m in sent)  # nothing after the close


def test_nothing_before_init():
    read, _ = _through([json.dumps({"method": "update", "data": {"k": 1}}), INIT])
    assert read == [{"type": "websocket.disconnect", "code": 1008}]


def test_the_pages_own_messages_pass_unchanged():
    own = [
        json.dumps(
            {
                "method": "init",
                "data": {
                    "upload:shiny.file": None,
                    "k:shiny.number": 3,
                    "seed:shiny.number": None,
                    "run:shiny.action": 0,
                    "columns": ["0", "1"],
                    "tabs": "data",
                    ".clientdata_output_x_hidden": False,
                },
            }
        ),
        json.dumps({"method": "update", "data": {"run:shiny.action": 1}}),
        _upload_init("data.csv"),
        json.dumps({"method": "uploadEnd", "tag": 3, "args": ["job", "upload"]}),
        json.dumps({"method": "other", "tag": 4, "args": []}),
    ]
    read, _ = _through(own)
    assert [m["text"] for m in read[:-1]] == own


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_safe_file_names(name):
    safe = websocket.safe_file_name(name, input_data.read_suffixes())
    assert safe and len(safe.encode()) <= 100 and safe == Path(safe).name
    assert not safe.startswith(("-", ".")) and not any(ch in safe for ch in '\x00/\\:*?"<>|')
    assert safe.isprintable() and websocket.safe_file_name(safe, input_data.read_suffixes()) == safe


# ---------------------------------------------------------------------------- a real server
class Server:
    """A running app (test_app.RunningApp) and requests to it as a client, with any Host."""

    def __init__(self, running):
        self.running, self.proc, self.port, self.private = (
            running,
            running.proc,
            running.port,
            running.private,
        )

    @property
    def stderr(self) -> str:
        return self.running.stderr

    def request(self, method, path, headers=None, body=None, host=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{self.port}")
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None and not callable(body):
            conn.putheader("Content-Length", str(len(body)))
        elif callable(body):
            conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        if callable(body):
            try:
                for piece in body():
                    conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
                conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):  # the server answered before the end
                pass
        elif body is not None:
            try:
                conn.send(body)
            except (BrokenPipeError, ConnectionResetError):
                pass
        response = conn.getresponse()
        return (
            response.status,
            dict(response.getheaders()),
            response.read().decode("utf-8", "replace"),
        )

    @property
    def cookie(self):
        return {"Cookie": f"microagg-app-{self.port}={TOKEN}"}

    @property
    def origin(self):
        return {"Origin": f"http://127.0.0.1:{self.port}"}


@contextlib.contextmanager
def app_server(*args):
    """``microagg app`` with the token TOKEN (given by the environment, as a script would)."""
    with running_app(*args, env={security.TOKEN_ENV: TOKEN}) as running:
        assert running.url.endswith(f"?token={TOKEN}")
        yield Server(running)


class ShinyClient:
    """The page's side of Shiny's websocket protocol, enough to drive the app as a page (or a
    hostile script holding the token) would."""

    OUTPUTS = (
        "error_line",
        "data-data_summary",
        "protect-columns_ui",
        "protect-roles_ui",
        "protect-method_ui",
        "protect-progress_ui",
        "results-results_ui",
        "results-result_detail",
        "compare-history_ui",
    )

    def __init__(self, server: Server, inputs: dict):
        from websockets.sync.client import connect

        self.server = server
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(
            connect(
                f"ws://127.0.0.1:{server.port}/websocket/",
                origin=f"http://127.0.0.1:{server.port}",
                additional_headers=server.cookie,
                open_timeout=30,
                close_timeout=2,
            )
        )
        self.session = json.loads(self.ws.recv(timeout=30))["config"]["sessionId"]
        self.values, self.responses, self.tag, self.clicks = {}, {}, 0, 0
        hidden = {f".clientdata_output_{name}_hidden": False for name in self.OUTPUTS}
        defaults = {
            "protect-k:shiny.number": 3,
            "protect-method": "mdav",
            "protect-seed:shiny.number": 0,
            "protect-time_limit:shiny.number": None,
            "protect-run:shiny.action": 0,
            "protect-cancel:shiny.action": 0,
            "data-upload:shiny.file": None,
            "data-dataset": "",
        }
        self.ws.send(json.dumps({"method": "init", "data": {**defaults, **hidden, **inputs}}))

    def close(self):
        self.stack.close()

    def update(self, **inputs):
        self.ws.send(json.dumps({"method": "update", "data": inputs}))

    def run(self, **inputs):
        self.clicks += 1
        self.update(**inputs, **{"protect-run:shiny.action": self.clicks})

    def call(self, method, *args, timeout=30):
        self.tag += 1
        tag = self.tag
        self.ws.send(json.dumps({"method": method, "args": list(args), "tag": tag}))
        self.wait_for(lambda: tag in self.responses, timeout)
        return self.responses[tag]

    def html(self, output: str) -> str:
        value = self.values.get(output)
        return value.get("html", "") if isinstance(value, dict) else ""

    def wait_for(self, predicate, timeout=60):
        end = time.monotonic() + timeout
        while True:
            if predicate():
                return
            assert time.monotonic() < end, (
                f"timed out; outputs: { {k: self.html(k)[:200] for k in self.values} }"
            )
            try:
                message = json.loads(self.ws.recv(timeout=0.5))
            except TimeoutError:
                continue
            self.values.update(message.get("values") or {})
            if "response" in message:
                self.responses[message["response"]["tag"]] = message["response"].get(
                    "value", message["response"]
                )

    def error_line(self, timeout=60) -> str:
        """The error line of the last Run click (or of anything else, once one shows)."""
        self.wait_for(lambda: "one-line-error" in self.html("error_line"), timeout)
        return re.sub(r"<[^>]+>", "", self.html("error_line")).strip()

    def upload(self, name: str, data: bytes, chunked=False):
        """uploadInit, POST, uploadEnd as Shiny's page does; returns the POST's (status, body)."""
        reply = self.call("uploadInit", [{"name": name, "size": len(data), "type": ""}])
        headers = {
            **self.server.cookie,
            **self.server.origin,
            "Content-Type": "application/octet-stream",
        }
        body = (
            (lambda: (data[i : i + 65536] for i in range(0, len(data), 65536))) if chunked else data
        )
        status, _, text = self.server.request("POST", "/" + reply["uploadUrl"], headers, body)
        if status == 200:
            self.call("uploadEnd", reply["jobId"], "data-upload")
        return status, text

    def data_name(self) -> str:
        found = re.search(r'id="data-name">([^<]*)<', self.html("data-data_summary"))
        return found.group(1) if found else ""


@pytest.fixture(scope="module")
def server():
    with app_server("--max-upload-mb", "0.5") as running:
        yield running


def test_the_real_server_answers_its_own_page_only(server):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    status, _, text = server.request(
        "GET", "/", host=f"evil.example:{server.port}", headers=server.cookie
    )
    assert status == 400 and text.count("\n") == 1
    assert server.request("GET", "/")[0] == 403
    status, headers, login = server.request("GET", f"/?token={TOKEN}")
    assert (
        status == 200 and "HttpOnly" in headers["set-cookie"] and 'location.replace("/")' in login
    )
    status, _, page = server.request("GET", "/", headers=server.cookie)
    assert status == 200 and "microagg" in page
    assert (
        'src="static/app.js"' in page and 'href="static/app.css"' in page
    )  # the page's script and style: files
    for asset in ("/static/app.css", "/static/app.js"):  # served by the app, behind its token
        assert server.request("GET", asset)[0] == 403
        status, headers, text = server.request("GET", asset, headers=server.cookie)
        assert (
            status == 200
            and text
            and headers["content-security-policy"] == "frame-ancestors 'none'"
        )
    url = f"ws://127.0.0.1:{server.port}/websocket/"
    for origin, headers in (
        ("http://evil.example", server.cookie),
        (f"http://127.0.0.1:{server.port}", {}),
        (f"http://127.0.0.1:{server.port + 1}", server.cookie),
    ):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, origin=origin, additional_headers=headers, open_timeout=20)
        assert refused.value.response.status_code == 403
    status, _, text = server.request(
        "POST",
        "/session/x/upload/y",
        headers={**server.cookie, "Origin": "http://evil.example"},
        body=b"x",
    )
    assert status == 403
    status, _, text = server.request(
        "GET", "/session/x/download/download_data", headers=server.cookie
    )
    assert status == 404


def test_hostile_input_values_are_one_line_on_the_page_and_nothing_on_stderr(server):
    client = ShinyClient(server, {"data-dataset": "census"})
    try:
        client.wait_for(lambda: client.data_name() == "census")
        before = server.stderr
        for inputs, words in (
            ({"protect-columns": ["0", "999"]}, "unknown column for columns ('999')"),
            ({"protect-columns": 5}, "not a column"),
            ({"protect-columns": ["0"], "protect-strata": ["77"]}, "unknown column for strata"),
            (
                {"protect-columns": ["0"], "protect-strata": [], "protect-sample_weight": "nope"},
                "unknown column for sample_weight",
            ),
            ({"protect-sample_weight": "", "protect-categorical": [{"a": 1}]}, "not a column"),
            (
                {"protect-categorical": [], "protect-k:shiny.number": "three"},
                "k must be an integer &gt;= 2, got 'three'",
            ),  # (HTML-escaped)
            ({"protect-k:shiny.number": 3, "protect-seed:shiny.number": -2}, "seed"),
            (
                {"protect-seed:shiny.number": 0, "protect-time_limit:shiny.number": ["1"]},
                "not a number for time_limit",
            ),
            (
                {"protect-time_limit:shiny.number": None, "protect-weights": ["1"]},
                "not text for weights",
            ),
            (
                {"protect-weights": "", "protect-time_limit:shiny.number": "-inf"},
                "time_limit must be a finite number",
            ),
            (
                {
                    "protect-time_limit:shiny.number": None,
                    "protect-scheduler": "tcp://192.0.2.1:8786",
                },
                "scheduler must be one of 'threads'",
            ),  # never reached: the data stay here
            ({"protect-scheduler": "", "protect-method": "nope"}, "unknown method 'nope'"),
        ):
            client.run(**inputs)
            client.wait_for(lambda: f'data-run="{client.clicks}"' in client.html("error_line"))
            assert words in client.error_line(), (inputs, client.error_line())
        assert "one-line-error" in client.html(
            "protect-method_ui"
        )  # the unknown method: one line in its place
        # downloads before any run: 404 with one line, for this very session
        for name in (
            "results-download_data",
            "results-download_report",
            "results-download_reproduce",
        ):
            status, _, text = server.request(
                "GET", f"/session/{client.session}/download/{name}", headers=server.cookie
            )
            assert status == 404 and text.strip() == "microagg app: no finished run to download", (
                name,
                text,
            )
        client.update(**{"data-dataset": "no-such-set"})
        client.wait_for(lambda: "unknown data set" in client.html("error_line"))
        time.sleep(0.5)
        assert server.stderr == before  # nothing on the server's stderr
    finally:
        client.close()


def test_uploads_are_bounded_named_safely_and_counted_per_page(server, tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(7000, 4)).round(6), columns=list("abcd"))
    data = frame.to_csv(index=False).encode()
    assert 0.25 * 2**20 < len(data) < 0.5 * 2**20  # under the limit, but two of them are not
    client = ShinyClient(server, {})
    try:
        assert client.upload("-data.csv", data) == (200, "OK")
        client.wait_for(lambda: client.data_name() == "data.csv")
        assert "changed to a safe one: data.csv" in client.html("data-data_summary")
        # a second file of the same size replaces the first (shown, used by no run): accepted
        assert client.upload("second.csv", data)[0] == 200
        client.wait_for(lambda: client.data_name() == "second.csv")
        # a run keeps it (its export needs it): a third file would take the page past the limit
        client.run(**{"protect-columns": ["0", "1", "2", "3"]})
        client.wait_for(lambda: "run 1:" in client.html("results-results_ui"), 120)
        client.update(
            **{"results-result_run": "1"}
        )  # the Results tab's choice, as the page sends it
        client.wait_for(lambda: "Run 1:" in client.html("results-result_detail"))
        status, text = client.upload("third.csv", data)
        assert status == 413 and "earlier uploads" in text and text.count("\n") == 1
        status, text = client.upload(
            "third.csv", data, chunked=True
        )  # no Content-Length: cut at the limit
        assert status == 413 and text.startswith(
            "the file is larger than the upload limit of 0.5 MB"
        )
        # the run's reproduce text, downloaded
        status, headers, exported = server.request(
            "GET",
            f"/session/{client.session}/download/results-download_reproduce",
            headers=server.cookie,
        )
        assert status == 200 and "microagg protect second.csv" in exported
    finally:
        client.close()
    fresh = ShinyClient(server, {})  # a new page has its own budget
    try:
        bomb = gzip.compress(b"a,b\n" + b"1,2\n" * 2**20)  # 4 MB of text in about 4 kB
        assert fresh.upload("bomb.csv.gz", bomb)[0] == 200
        assert "decompresses to more than the limit of 0.5 MB" in fresh.error_line()
        assert fresh.upload("picture.csv", b"\x89PNG\r\n\x1a\n" + bytes(200))[0] == 200
        fresh.wait_for(lambda: "PNG image" in fresh.error_line())
        dta = tmp_path / "big.dta"
        frame.head(50).to_stata(dta, write_index=False, version=118)
        raw = bytearray(dta.read_bytes())
        raw[raw.index(b"<N>") + 3 : raw.index(b"<N>") + 11] = (2**31).to_bytes(8, "little")
        assert fresh.upload("big.dta", bytes(raw))[0] == 200
        fresh.wait_for(lambda: "2,147,483,648 rows" in fresh.error_line())
        assert fresh.upload("..", data)[0] == 200
        fresh.wait_for(lambda: "unsupported file format: upload" in fresh.error_line())
        message = fresh.error_line()
        assert "microagg-app-" not in message and fresh.session not in message  # no private path
        # a second file for one upload job, and an upload the client breaks off: no 500, no line on
        # stderr
        reply = fresh.call("uploadInit", [{"name": "a.csv", "size": 8, "type": ""}])
        headers = {**server.cookie, **server.origin}
        assert server.request("POST", "/" + reply["uploadUrl"], headers, b"a,b\n1,2\n")[0] == 200
        assert server.request("POST", "/" + reply["uploadUrl"], headers, b"a,b\n1,2\n")[0] == 409
        reply = fresh.call("uploadInit", [{"name": "b.csv", "size": 100_000, "type": ""}])
        with socket.create_connection(("127.0.0.1", server.port)) as cut:
            cut.sendall(
                f"POST /{reply['uploadUrl']} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                f"Cookie: {server.cookie['Cookie']}\r\nOrigin: {server.origin['Origin']}\r\n"
                "Content-Length: 100000\r\n\r\n".encode()
                + b"x" * 1000
            )
            time.sleep(0.3)
        time.sleep(0.5)
        assert server.stderr == ""
    finally:
        fresh.close()


# ---------------------------------------------------------------------------- nothing outlives the
# app
def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pids, seconds=15.0) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _worker_of(pid: int, seconds=60.0) -> int:
    """The run process the app at ``pid`` spawned (not multiprocessing's resource tracker)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for child in _children(pid):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline:
                return child
        time.sleep(0.005)
    raise AssertionError("no run process appeared")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_stopping_the_app_right_after_a_run_starts_leaves_no_process(how):
    """The run's process is killed with the app during its imports (SIGTERM, Ctrl+C: the CLI's
    handler exits at once; SIGKILL: no handler at all)."""
    with app_server() as running:
        client = ShinyClient(running, {"data-dataset": "census"})
        client.wait_for(lambda: client.data_name() == "census")
        client.run(
            **{
                "protect-columns": [str(i) for i in range(13)],
                "protect-method": "colgen",
                "protect-time_limit:shiny.number": 600,
            }
        )
        worker = _worker_of(running.proc.pid)
        processes = [
            worker,
            *_children(running.proc.pid),
            *_children(worker),
        ]  # also multiprocessing's tracker
        running.proc.send_signal(how)  # the worker is still importing: it has not computed anything
        running.proc.wait(timeout=15)
        assert _wait_gone(processes) == [], "a process of the app outlived it"
        with contextlib.suppress(Exception):
            client.close()
        if how != signal.SIGKILL:
            assert not any(p.exists() for p in running.private), (
                "the private folder outlived the app"
            )
        else:  # nothing could remove it: the test does
            for p in running.private:
                private.cleanup_workdir(p)


_IDLE_PARENT = """
import multiprocessing, os, time
from microagg.app import run_process

def idle(parent):
    run_process.die_with(parent)
    time.sleep(600)  # busy without a word to its parent: only die_with can end it

if __name__ == "__main__":
    spawn = multiprocessing.get_context("spawn")
    child = spawn.Process(target=idle, args=(os.getpid(),), daemon=True)
    child.start()
    print(child.pid, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("delay", [0.0, 3.0])
def test_a_run_process_dies_with_its_parent_at_any_moment(tmp_path, delay):
    """A parent killed (SIGKILL: no handler, no cleanup) at once, while its child is still starting
    (the child then finds itself orphaned), or later (the kernel's parent-death signal): the
    child never outlives it. A real run's process too."""
    script = tmp_path / "parent.py"
    script.write_text(_IDLE_PARENT)
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    parent = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True
    )
    child = int(parent.stdout.readline())
    time.sleep(delay)
    parent.kill()
    parent.wait()
    assert _wait_gone([child]) == []
    run = (
        "import time, microagg\nfrom microagg.app import run_handle, runspec\ncolumns ="
        " list(microagg.datasets.load('census').columns)\nspec = runspec.RunSpec.of('', 'census',"
        " 3, 'colgen', columns, dataset='census', time_limit=600)\nh = run_handle.RunHandle(spec,"
        f" {str(tmp_path)!r}, 1)\nprint(h.process.pid, flush=True)\ntime.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", run], env=env, stdout=subprocess.PIPE, text=True
    )
    worker = int(parent.stdout.readline())
    time.sleep(delay)
    parent.kill()
    parent.wait()
    assert _wait_gone([worker]) == []


# ---------------------------------------------------------------------------- command line and
# logic
@pytest.mark.parametrize(
    "argv, words",
    [
        (["--port", "70000"], "--port must be a whole number from 0"),
        (["--port", "-1"], "--port must be a whole number from 0"),
        (["--max-upload-mb", "inf"], "--max-upload-mb must be a positive number"),
        (["--max-upload-mb", "nan"], "--max-upload-mb must be a positive number"),
        (["--max-upload-mb", "0"], "--max-upload-mb must be a positive number"),
        (["--max-upload-mb", "1e-9"], "at least one byte"),
        (["--token", "short"], "token must be at least 16 characters"),
        (["--token", "has a space in it, long enough"], "token must be"),
    ],
)
def test_bad_app_options_are_one_line(capsys, argv, words):
    from microagg import cli

    before = set(Path(tempfile.gettempdir()).glob("microagg-app-*"))
    assert cli.main(["app", "--no-browser", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert set(Path(tempfile.gettempdir()).glob("microagg-app-*")) == before


def test_a_bad_token_in_the_environment_is_one_line(capsys, monkeypatch):
    from microagg import cli

    monkeypatch.setenv(security.TOKEN_ENV, "x")
    assert cli.main(["app", "--no-browser"]) == 2
    assert "token must be at least 16" in capsys.readouterr().err


def test_the_reproduce_command_is_safe_for_names_that_look_like_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = microagg.datasets.load("census").head(60)
    df = df.rename(columns={df.columns[0]: "-x"})
    df.to_csv("-data.csv", index=False)
    spec = runspec.RunSpec.of(
        "-data.csv", "-data.csv", k=3, method="mdav", columns=["-x", df.columns[1]], seed=0
    )
    command = spec.cli_command()
    assert (
        " ./-data.csv " in command
        and " ./-data-mdav-k3.csv " in command
        and "--columns=-x," in command
    )
    from microagg import cli

    assert cli.main(shlex.split(command)[1:] + ["-q"]) == 0
    got = pd.read_csv("-data-mdav-k3.csv")
    expected = microagg.microaggregate(df, k=3, columns=["-x", df.columns[1]])
    np.testing.assert_allclose(
        got[["-x", df.columns[1]]].to_numpy(), expected.data[["-x", df.columns[1]]].to_numpy()
    )


def test_error_lines_never_show_private_paths():
    work = private.private_workdir()
    try:
        inside = work / "session-0123abcd" / "upload-1" / "survey.csv"
        message = private.one_line(microagg.InputError(f"input has no data rows: {inside}"))
        assert message == "input has no data rows: survey.csv"
        other = (  # another app's folder, or a copy of a path
            "/tmp/microagg-app-zzz/session-99/upload-3/x.dta"
        )
        assert private.private_text(f"cannot read '{other}': bad") == "cannot read 'x.dta': bad"
    finally:
        private.cleanup_workdir(work)


def test_wide_data_measures_and_report_use_a_capped_set_of_columns(tmp_path):
    """A 40 x 5,000-column run spent minutes in "measures and report": they now look at the first
    REPORT_COLUMNS quasi-identifiers and say so; IL stays the whole run's."""
    rng = np.random.default_rng(3)
    d = report_module.REPORT_COLUMNS + 60
    df = pd.DataFrame(rng.normal(size=(40, d)), columns=[f"v{i}" for i in range(d)])
    src = tmp_path / "wide.csv"
    df.to_csv(src, index=False)
    handle = run_handle.RunHandle(
        runspec.RunSpec.of(str(src), "wide.csv", k=3, method="mdav", columns=list(df.columns)),
        tmp_path,
        1,
    )
    while handle.poll() == "running":
        time.sleep(0.1)
    assert handle.state == "done", handle.error
    expected = microagg.microaggregate(df, k=3, method="mdav")
    assert figures.headline(handle.figures) == pytest.approx(expected.information_loss, rel=1e-12)
    note = [w for w in handle.figures["warnings"] if "first 40 of the 100" in w]
    assert note, handle.figures["warnings"]
    report = handle.report_path.read_text()
    assert "first 40 of the 100 quasi-identifier columns" in report
    assert (
        report.count('class="cell"') == 2 * report_module.REPORT_COLUMNS**2
    )  # two heat maps of 40 x 40
    view, _ = report_module.measured_view(expected)
    assert (
        view.columns == list(df.columns[: report_module.REPORT_COLUMNS])
        and view.information_loss == expected.information_loss
    )


def test_the_browser_is_sent_a_private_file_not_the_token(tmp_path):
    """The browser's command line (which every user of the machine can read) holds a file name;
    the file, readable by its owner only, sends the browser to the address with the token."""
    from microagg.app import _launcher

    url = f"http://127.0.0.1:{PORT}/?token={TOKEN}"
    path = _launcher(tmp_path, url)
    assert (path.stat().st_mode & 0o777) == 0o600 and TOKEN not in path.as_uri()
    assert f'content="0;url={url}"' in path.read_text()
