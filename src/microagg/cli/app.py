"""``microagg app``: the local point-and-click web app (``microagg.app``), imported only when
asked for."""

from __future__ import annotations

from .common import UserError


def declare(commands) -> None:
    """The app command and its flags."""
    ap = commands.add_parser("app", help="open the point-and-click web app in the browser")
    ap.add_argument("file", nargs="?", help="a data file to load at start")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    ap.add_argument("--no-browser", action="store_true", help="do not open the browser")
    ap.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)"
    )
    ap.add_argument(
        "--allow-remote", action="store_true", help="allow a --host other machines can reach"
    )
    ap.add_argument(
        "--max-upload-mb",
        type=float,
        default=2048.0,
        metavar="N",
        help=(
            "upload limit of a page, all its uploads together; also what an upload may "
            "decompress to "
            "(default 2048)"
        ),
    )
    ap.add_argument(
        "--token",
        help=(
            "the token the page needs (default: $MICROAGG_APP_TOKEN, else a random one); "
            "other users of this machine can see a command line: prefer the variable"
        ),
    )
    ap.set_defaults(func=run)


def run(args) -> int:
    """microagg app: the local web app (microagg.app), imported only when asked for."""
    import importlib.util

    if importlib.util.find_spec("shiny") is None:
        raise UserError('the app needs its extra: pip install "microagg[app]"')
    from ..app import serve

    return serve(
        args.file,
        host=args.host,
        port=args.port,
        open_browser=not args.no_browser,
        allow_remote=args.allow_remote,
        max_upload_mb=args.max_upload_mb,
        token=args.token,
    )
