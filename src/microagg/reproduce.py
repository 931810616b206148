"""Re-create a publication from its manifest: ``microagg protect INPUT -o OUT --from-manifest M``.

The manifest (``microagg.manifest``) holds the protect command that made the file, the input's
SHA-256 and how it was read, and the output's SHA-256. ``protect_from_manifest`` checks the input
is the one the manifest was made from, runs that command again on it (the same run options,
method parameters and seed; the input's read options), and compares the new file with the
manifest's: byte for byte (SHA-256), or, when the records were shuffled (a fresh random order by
design, never written anywhere), as a multiset of rows (``manifest.rows_digest``: the manifest's
``rows_sha256``, or the earlier output beside the manifest when an older manifest lacks it).
A run bounded by work, or not bounded, reproduces at any load; a run the time limit cut does not
(its manifest says so: ``run.reproducible``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .errors import InputError

__all__ = ["protect_arguments", "protect_from_manifest", "READ_FLAGS"]

#: the input's read options the manifest keeps (``input.read``) and protect's flags for them
READ_FLAGS = {"sep": "--sep", "decimal": "--decimal", "encoding": "--encoding", "sheet": "--sheet"}
#: protect's own flags that may be given beside --from-manifest (how to run, not what)
ALLOWED_BESIDE = ("quiet", "json", "report", "labels_out")


def protect_arguments(doc: dict, input_path: str, output_path: str) -> list[str]:
    """protect's arguments (after the word ``protect``) that re-run the manifest's publication,
    reading ``input_path`` and writing ``output_path``."""
    try:
        words = shlex.split(str(doc.get("command", "")))
    except ValueError:
        words = []
    if words[:2] != ["microagg", "protect"] or len(words) < 5 or words[3] != "-o":
        raise InputError("the manifest holds no protect command to re-run")
    flags = words[5:]
    read = (doc.get("input") or {}).get("read") or {}
    for name, flag in READ_FLAGS.items():
        value = read.get(name)
        if value not in (None, ""):
            flags += [f"{flag}={value}"]
    return [str(input_path), "-o", str(output_path), *flags]


def _expected(doc: dict, manifest_path: Path) -> tuple[str, str | None, str]:
    """(how, digest, what) the new file is compared by: ``sha256`` of the bytes, or ``rows`` of a
    shuffled output (None when neither the manifest nor the earlier file gives it)."""
    out = doc.get("output") or {}
    if not doc.get("shuffled"):
        return "sha256", out.get("sha256"), "SHA-256"
    if out.get("rows_sha256"):
        return "rows", out["rows_sha256"], "rows (shuffled: order aside)"
    from .manifest import rows_digest, sha256

    earlier = manifest_path.with_name(str(out.get("name", "")))
    if out.get("name") and earlier.exists() and sha256(earlier) == out.get("sha256"):
        return (
            "rows",
            rows_digest(earlier, out.get("read"), out.get("format")),
            "rows (shuffled: order aside)",
        )
    return "rows", None, "rows (shuffled: order aside)"


def protect_from_manifest(args, parse, protect) -> int:
    """``protect INPUT -o OUT --from-manifest M``: run M's command again on INPUT, write OUT, and
    check OUT against M (one line on a mismatch: an InputError, exit status 2; OUT stays, to be
    compared). ``parse(argv)``: protect's parsed arguments; ``protect(args)``: cmd_protect."""
    from . import manifest
    from .manifest import rows_digest
    from .options import RUN_OPTIONS

    given = [p.flags[0] for p in RUN_OPTIONS if p.flags and getattr(args, p.name, None) is not None]
    given += [
        f
        for f, v in (
            ("--param", args.param),
            ("--init", args.init),
            ("--from-explore", args.from_explore),
            ("--pick", args.pick),
            ("--out-of-core", args.out_of_core),
            ("--interval-p", args.interval_p),
        )
        if v
    ]
    given += [f"--{name}" for name in READ_FLAGS if getattr(args, name, None) is not None]
    if given:
        raise InputError(
            f"--from-manifest re-runs the publication as it was made: drop {', '.join(given)}"
        )
    path = Path(args.from_manifest)
    doc = manifest.read(path)
    src = Path(args.input)
    if not src.exists():
        raise InputError(f"input file not found: {src}")
    made_from = (doc.get("input") or {}).get("sha256")
    if made_from and manifest.sha256(src) != made_from:
        raise InputError(
            f"{src.name} is not the file {path.name} was made from (its SHA-256 differs)"
        )
    how, expected, what = _expected(doc, path)
    argv = protect_arguments(doc, args.input, args.output)
    argv += [
        f"--{name.replace('_', '-')}"
        + ("" if isinstance(getattr(args, name), bool) else f"={getattr(args, name)}")
        for name in ALLOWED_BESIDE
        if getattr(args, name, None)
    ]
    status = protect(parse(argv))
    if status:
        return status
    if expected is None:
        raise InputError(
            f"{Path(args.output).name} written, but {path.name} is of a shuffled file and neither"
            " it (rows_sha256) nor the earlier file beside it gives its rows: compare them"
            " yourself"
        )
    if how == "sha256":
        got = manifest.sha256(args.output)
    else:
        got = rows_digest(
            args.output,
            (doc.get("output") or {}).get("read"),
            (doc.get("output") or {}).get("format"),
        )
    if got != expected:
        note = (
            ""
            if (doc.get("run") or {}).get("reproducible", True)
            else (
                f" ({path.name} says its run was"
                f" {(doc.get('run') or {}).get('note', 'stopped by the time limit')})"
            )
        )
        raise InputError(
            f"{Path(args.output).name} does NOT reproduce {out_name(doc)}: its {what} differ from "
            f"{path.name}'s{note}"
        )
    if not getattr(args, "json", False):
        print(f"reproduced: {Path(args.output).name} matches {out_name(doc)} ({what}, {path.name})")
    return 0


def out_name(doc: dict) -> str:
    return str((doc.get("output") or {}).get("name", "the published file"))
