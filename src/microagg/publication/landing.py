"""Landing a publication's files together: each side file (manifest, report, labels) staged as a
temporary file beside its target and renamed only once the output is in place; if one cannot be,
the output goes too (no output without its manifest)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import InputError


def stage_text(target: Path, text: str) -> str:
    """``text`` written to a temporary file beside ``target`` (renamed by :func:`land`)."""
    import tempfile

    from .. import io

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from None
    io.register_temporary(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
    except OSError as exc:  # a full disk: the temporary file goes too
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        io.unregister_temporary(tmp)
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return tmp


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def land(staged, output: Path) -> None:
    """Rename the side files into place once the output (a file, or the out-of-core mode's folder)
    is; if one cannot be, the output goes too (no output without its manifest)."""
    try:
        for tmp, target in staged:
            os.replace(tmp, target)
    except OSError as exc:
        _remove(output)
        for _, target in staged:
            with contextlib.suppress(OSError):
                if Path(target).exists():
                    os.unlink(target)
        raise InputError(
            f"cannot write {target}: {exc.strerror or exc}; nothing was written"
        ) from None


def _remove(output) -> None:
    """The output just landed, removed: a file, or a folder with everything in it."""
    if os.path.isdir(output) and not os.path.islink(output):
        import shutil

        shutil.rmtree(output, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        os.unlink(output)


def manifest_text(doc) -> str:
    import json

    from ..manifest import json_safe

    return json.dumps(json_safe(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def labels_text(labels) -> str:
    """The labels file: one line per record, its group label (per-variable methods: one label per
    column, comma-separated); ``--init`` reads it back."""
    if labels.ndim == 1:
        return "\n".join(map(str, labels.tolist())) + "\n"
    return "\n".join(",".join(map(str, row)) for row in labels.tolist()) + "\n"


def discard(staged) -> None:
    """Remove the staged temporaries that were not landed (after a failure, or none once landed)."""
    from .. import io

    for tmp, _ in staged:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        io.unregister_temporary(tmp)
