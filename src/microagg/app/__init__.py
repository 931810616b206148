"""``microagg app``: a local web app to protect a file by pointing and clicking (Shiny for Python).

The server binds to 127.0.0.1 unless a non-loopback host is allowed explicitly, and only its own
page drives it (``microagg.app.security``): a random token, printed in the address that is
opened, is required on every request (a cookie after the first visit), the Host must be the
server's and the Origin the page's. Uploads are bounded (the session's total, and what a file
decompresses to or claims: ``microagg.read_limits``). Uploads, results and reports live in a
private temporary folder (mode 0700) removed when the server stops. Each protection runs in its
own spawned process, tied to the app's life from its first line (``run_process``), so the page
stays responsive during long numba runs, Cancel stops a run at once, even inside a compiled
kernel, and no run outlives the app.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import webbrowser

__all__ = ["serve", "is_loopback"]

DEFAULT_MAX_UPLOAD_MB = 2048.0


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_port(port) -> int:
    from ..errors import InputError

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InputError(f"--port must be a whole number from 0 (a free port) to 65535, got {port}")
    return port


def upload_limit_bytes(max_upload_mb) -> int:
    """The upload limit in bytes, from megabytes: a finite positive number of at least one byte."""
    from ..errors import InputError

    try:
        mb = float(max_upload_mb)
    except (TypeError, ValueError):
        mb = math.nan
    if not (math.isfinite(mb) and mb * 1024 * 1024 >= 1 and mb <= 2.0**40):
        raise InputError(
            "--max-upload-mb must be a positive number of megabytes (at least one byte, at most "
            f"2^40 MB), got {max_upload_mb}"
        )
    return int(mb * 1024 * 1024)


def app_token(token: str | None = None) -> str:
    """The token: the one given (``--token``), else ``$MICROAGG_APP_TOKEN``, else a new random
    one."""
    from . import security

    given = token if token is not None else os.environ.get(security.TOKEN_ENV)
    return security.check_token(given) if given is not None else security.new_token()


def serve(
    file: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = True,
    allow_remote: bool = False,
    max_upload_mb: float = DEFAULT_MAX_UPLOAD_MB,
    token: str | None = None,
) -> int:
    """Run the app until interrupted; returns an exit status. ``port=0`` picks a free port;
    ``token``: the app's token (default ``$MICROAGG_APP_TOKEN``, else a random one)."""
    from ..errors import InputError
    from . import security
    from .input_data import read_input
    from .private import cleanup_workdir, private_workdir
    from .run_handle import stop_all_runs

    if not is_loopback(host) and not allow_remote:
        raise InputError(
            f"--host {host} is not a loopback address: add --allow-remote to serve other machines"
        )
    port = check_port(port)
    limit = upload_limit_bytes(max_upload_mb)
    token = app_token(token)
    if file is not None:
        read_input(file)  # a bad FILE is one error line before the server starts
    workdir = private_workdir()
    _register_temporary(workdir, True)
    previous_tempdir = tempfile.tempdir
    tempfile.tempdir = str(workdir)  # Shiny's upload folders go inside the private folder too
    sock = _open_socket(host)
    try:
        port = _listen(sock, host, port)
        if not is_loopback(host):
            print(
                f"microagg app: warning: serving on {host}: anyone who can reach this machine on"
                f" port {port} and holds the token can upload data and read the results",
                file=sys.stderr,
            )
        access = security.Access.for_server(host, port, token, allow_remote)
        app = _guarded_app(workdir, file, max_upload_mb, limit, access)
        server = _server(app)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/?token={token}"
        print(f"microagg app: {url}  (Ctrl+C stops it)", flush=True)
        if open_browser:
            threading.Timer(1.0, webbrowser.open, args=(_launcher(workdir, url).as_uri(),)).start()
        server.run(sockets=[sock])
    finally:
        sock.close()
        stop_all_runs()
        tempfile.tempdir = previous_tempdir
        cleanup_workdir(workdir)
        _register_temporary(workdir, False)
    return 0


def _open_socket(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.socket(family, socket.SOCK_STREAM)


def _listen(sock: socket.socket, host: str, port: int) -> int:
    """Bind ``sock`` to ``host:port`` and listen; returns the port (the free one picked for 0)."""
    from ..errors import InputError

    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:  # port taken, address not on this machine: exit 2
        raise InputError(
            f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    # listen before the address is printed: a browser (or test) opening it at once is queued
    # until the server accepts, instead of refused
    sock.listen(2048)
    return sock.getsockname()[1]


def _guarded_app(workdir, file, max_upload_mb, limit: int, access):
    """The Shiny app inside its guards: the Gate (Host, Origin and the token ``access`` allows)
    outside, then the session's upload limit (``security``), then the websocket's message checks
    (``websocket``)."""
    from . import security, websocket
    from .input_data import read_suffixes
    from .page import FILE_INPUTS, build_app

    budget = security.UploadBudget(limit)
    shiny_app = build_app(workdir, file, float(max_upload_mb), budget)
    messages = websocket.ShinyMessages(shiny_app, FILE_INPUTS, read_suffixes())
    return security.Gate(security.UploadLimit(messages, budget), access)


def _server(app):
    """A uvicorn server for ``app`` that stops gracefully on Ctrl+C / SIGTERM."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            # In the main thread: stop gracefully on Ctrl+C / SIGTERM and return (uvicorn would
            # re-raise the signal after shutting down, before the private folder is removed).
            # In another thread (the CLI runs commands in a worker thread), the main thread's
            # handler exits the process and removes the registered private folder.
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {
                s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                yield
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)

    # proxy_headers off: no X-Forwarded-* header changes what a request's client or scheme is
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=3,
        proxy_headers=False,
        server_header=False,
        ws_max_size=4 * 1024 * 1024,
    )
    return Server(config)


def _launcher(workdir, url: str):
    """A page in the private folder (readable by this user only) that sends the browser to ``url``:
    the browser is started with this file's name, not with the token, which any user of the machine
    could read in the process list (as Jupyter does)."""
    import html
    from pathlib import Path

    path = Path(workdir) / "open.html"
    target = html.escape(url)
    text = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="refresh"'
        f' content="0;url={target}"><title>microagg</title></head><body><p><a href="{target}">open'
        " microagg app</a></p></body></html>\n"
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _register_temporary(path, on: bool) -> None:
    """Put the private folder in ``microagg.io``'s list of temporaries, which the command line's
    Ctrl+C / SIGTERM handler removes before it exits the process."""
    from .. import io

    (io.register_temporary if on else io.unregister_temporary)(path)
