"""``microagg app``: a local web app to protect a file by pointing and clicking (Shiny for Python).

The server binds to 127.0.0.1 unless a non-loopback host is allowed explicitly. Uploads, results
and reports live in a private temporary folder (mode 0700) removed when the server stops. Each
protection runs in its own spawned process, so the page stays responsive during long numba runs
and Cancel stops a run at once, even inside a compiled kernel.
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import sys
import tempfile
import threading
import webbrowser

__all__ = ["serve", "is_loopback", "UploadLimit"]

DEFAULT_MAX_UPLOAD_MB = 2048.0


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class UploadLimit:
    """ASGI middleware: refuse an upload request whose body is larger than ``limit`` bytes (413),
    by its Content-Length before reading it and by counting the bytes as they arrive."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST" or "/upload/" not in scope.get("path", ""):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        try:
            declared = int(headers.get(b"content-length", b"-1"))
        except ValueError:
            declared = -1
        if declared > self.limit:
            return await _too_large(send, self.limit)
        received = 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise ValueError("upload larger than the limit")
            return message

        return await self.app(scope, counting_receive, send)


async def _too_large(send, limit: int) -> None:
    body = f"the file is larger than the upload limit of {limit / 1024 / 1024:g} MB".encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def serve(file: str | None = None, *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
          allow_remote: bool = False, max_upload_mb: float = DEFAULT_MAX_UPLOAD_MB) -> int:
    """Run the app until interrupted; returns an exit status. ``port=0`` picks a free port."""
    import uvicorn

    from ..errors import InputError
    from . import logic
    from .page import build_app

    if not is_loopback(host) and not allow_remote:
        raise InputError(f"--host {host} is not a loopback address: add --allow-remote to serve other machines")
    if not max_upload_mb > 0:
        raise InputError(f"--max-upload-mb must be positive, got {max_upload_mb:g}")
    if file is not None:
        logic.read_input(file)  # a bad FILE is one error line before the server starts
    workdir = logic.private_workdir()
    _register_temporary(workdir, True)
    previous_tempdir = tempfile.tempdir
    tempfile.tempdir = str(workdir)  # Shiny's upload folders go inside the private folder too
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:  # port taken, address not on this machine: one line, exit 2
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        # listen before the address is printed: a browser (or test) opening it at once is queued
        # until the server accepts, instead of refused
        sock.listen(2048)
        port = sock.getsockname()[1]
        if not is_loopback(host):
            print(f"microagg app: warning: serving on {host}: anyone who can reach this machine on port {port} "
                  "can upload data and read the results", file=sys.stderr)
        app = UploadLimit(build_app(workdir, file, max_upload_mb), int(max_upload_mb * 1024 * 1024))
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
                previous = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for s, handler in previous.items():
                        signal.signal(s, handler)

        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=3)
        server = Server(config)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        print(f"microagg app: {url}  (Ctrl+C stops it)", flush=True)
        if open_browser:
            threading.Timer(1.0, webbrowser.open, args=(url,)).start()
        server.run(sockets=[sock])
    finally:
        sock.close()
        logic.stop_all_runs()
        tempfile.tempdir = previous_tempdir
        logic.cleanup_workdir(workdir)
        _register_temporary(workdir, False)
    return 0


def _register_temporary(path, on: bool) -> None:
    """Put the private folder in ``microagg.io``'s list of temporaries, which the command line's
    Ctrl+C / SIGTERM handler removes before it exits the process."""
    from .. import io

    (io.register_temporary if on else io.unregister_temporary)(path)
