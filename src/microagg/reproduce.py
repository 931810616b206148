"""Re-create a publication from its manifest: ``microagg protect INPUT -o OUT --from-manifest M``.

A manifest is data, never a command. Its ``command`` is shown to people and never parsed: the
re-run is built from the manifest's declared run, as its schema (``documents``) validated it:
``run.options`` (with ``run.k``, ``run.method`` and ``run.seed``, which must agree with them and
with ``roles.k``), ``run.params`` and ``input.read``, each checked again by the run options'
own declarations (``options.validate_run``). Nothing the manifest holds names a file that is read
or written: the input, the output, the report and the labels are the ones the user named; the
only file the manifest leads to is the earlier output beside it (``output.name``, a plain name in
the manifest's own folder), read when an older manifest of a shuffled file lacks its rows' digest.

Before anything lands, the new file and its manifest are checked against the declared one
(:meth:`Replay.confirm`, called by the publication stage with the new manifest while the output is
still a temporary file): the method, k, the seed, the roles of the columns (QIs and their kinds,
keys, strata, sensitive columns, sampling weight), whether the records were shuffled, and the
file: byte for byte (SHA-256), or, when the records were shuffled (a fresh random order by design,
never written anywhere), as a multiset of rows (``manifest.rows_digest``). A refused replay
writes nothing. A run bounded by work, or not bounded, reproduces at any load; a run the time
limit cut does not (its manifest says so: ``run.reproducible``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

__all__ = ["Replay", "READ_FLAGS", "out_name"]

#: the input's read options the manifest keeps (``input.read``) and protect's flags for them
READ_FLAGS = {"sep": "--sep", "decimal": "--decimal", "encoding": "--encoding", "sheet": "--sheet"}
#: the roles a re-run must give the columns as the manifest declares them
CHECKED_ROLES = ("columns", "kinds", "k", "strata", "keys", "sensitive", "sample_weight")


def refuse_given_flags(args) -> None:
    """--from-manifest re-runs the publication as it was made: any run option, parameter or read
    option given beside it is an error (the output's own files, --json and --quiet may be)."""
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


@dataclass
class Replay:
    """A manifest's declared run, checked, ready to publish again and to be confirmed."""

    path: Path  # the manifest
    doc: dict  # as its schema read it
    options: dict
    params: dict
    read_options: dict
    interval_p: float | None
    expected: tuple  # (how, digest, what): see ``_expected``

    @classmethod
    def of(cls, manifest_path, input_path) -> Replay:
        """The run ``manifest_path`` declares, for the input ``input_path`` (the file it was made
        from: same SHA-256); one InputError line, before any work, when it cannot be replayed."""
        from . import manifest

        path = Path(manifest_path)
        doc = manifest.read(path)
        src = Path(input_path)
        if not src.is_file():
            raise InputError(f"input file not found: {src}")
        made_from = doc["input"]["sha256"]
        if manifest.sha256(src) != made_from:
            raise InputError(
                f"{src.name} is not the file {path.name} was made from (its SHA-256 differs)"
            )
        options, params = declared_run(doc, path.name)
        read = dict(doc["input"].get("read") or {})
        missing = read.pop("missing", None) or options.get("missing") or ()
        read_options = {name: read.get(name) for name in READ_FLAGS}
        read_options["missing"] = (missing,) if isinstance(missing, str) else tuple(missing)
        p = doc["roles"].get("p")
        interval_p = None if p is None or float(p) == 10.0 else float(p)
        expected = _expected(doc, path)
        if expected[1] is None:
            raise InputError(
                f"{path.name} is of a shuffled file and neither it (rows_sha256) nor the earlier"
                " file beside it gives its rows: the re-run could not be checked, so it is not"
                " made"
            )
        return cls(path, doc, options, params, read_options, interval_p, expected)

    def confirm(self, new: dict) -> None:
        """The new publication's manifest ``new`` (its output still a temporary file) against the
        declared one: one InputError line on the first difference, and nothing lands."""
        from .manifest import json_safe

        old = self.doc
        for field in ("method", "k", "seed"):
            if json_safe(new["run"].get(field)) != json_safe(old["run"].get(field)):
                raise self._differs(f"its run's {field}")
        old_roles, new_roles = json_safe(old["roles"]), json_safe(new["roles"])
        for role in CHECKED_ROLES:
            if old_roles.get(role) != new_roles.get(role):
                raise self._differs(f"the roles of its columns ({role})")
        if bool(new.get("shuffled")) != bool(old.get("shuffled")):
            raise self._differs("whether the records are shuffled")
        how, expected, what = self.expected
        got = new["output"]["sha256"] if how == "sha256" else new["output"].get("rows_sha256")
        if got != expected:
            raise self._differs(f"its {what}")

    def _differs(self, what: str) -> InputError:
        run = self.doc["run"]
        cut = run.get("note", "stopped by the time limit")
        note = "" if run.get("reproducible", True) else f" ({self.path.name}: its run was {cut})"
        return InputError(
            f"the re-run does NOT reproduce {out_name(self.doc)}: {what} differ(s) from "
            f"{self.path.name}'s{note}; nothing was written"
        )

    def said(self, output) -> str:
        return (
            f"reproduced: {Path(output).name} matches {out_name(self.doc)} "
            f"({self.expected[2]}, {self.path.name})"
        )


def declared_run(doc: dict, name: str) -> tuple[dict, dict]:
    """(run options, method parameters) of the manifest's declared run, validated by their
    declarations; its k, method and seed agree wherever the manifest states them."""
    from .options import validate_run

    run = doc["run"]
    if run.get("out_of_core"):
        raise InputError(
            f"{name} is of an out-of-core publication: --from-manifest re-runs files only"
            " (run the options it lists with --out-of-core)"
        )
    options = dict(run["options"])
    params = dict(run["params"])
    given = [n for n, v in {**options, **params}.items() if isinstance(v, str) and v[:1] == "("]
    if given:
        raise InputError(
            f"{name}'s run was given data it does not hold ({', '.join(given)}): it cannot be"
            " re-run from the manifest"
        )
    stated = {
        "k": (run["k"], options.get("k", run["k"]), doc["roles"]["k"]),
        "method": (run["method"], options.get("method", run["method"])),
        "seed": (run.get("seed", 0), options.get("seed", run.get("seed", 0))),
    }
    for what, values in stated.items():
        if any(v != values[0] for v in values):
            raise InputError(
                f"{name} is not consistent: its run's {what} is stated as "
                f"{' and '.join(map(repr, dict.fromkeys(values)))}; it is not re-run"
            )
    options.update(k=run["k"], method=run["method"])
    for ignored in ("progress", "scheduler", "shuffle_seed", "labels"):
        options.pop(ignored, None)
    try:
        validate_run(options, params)
    except InputError as exc:
        raise InputError(f"{name}'s run is not a valid run: {exc}") from None
    return options, params


def _expected(doc: dict, manifest_path: Path) -> tuple[str, str | None, str]:
    """(how, digest, what) the new file is compared by: ``sha256`` of the bytes, or ``rows`` of a
    shuffled output (None when neither the manifest nor the earlier file gives it). The earlier
    file is only looked for in the manifest's own folder, under its plain name."""
    out = doc["output"]
    if not doc.get("shuffled"):
        return "sha256", out.get("sha256"), "SHA-256"
    what = "rows (shuffled: order aside)"
    if out.get("rows_sha256"):
        return "rows", out["rows_sha256"], what
    from .manifest import rows_digest, sha256

    earlier = _beside(manifest_path, str(out.get("name", "")))
    if earlier is not None and sha256(earlier) == out.get("sha256"):
        return "rows", rows_digest(earlier, out.get("read"), out.get("format")), what
    return "rows", None, what


def _beside(manifest_path: Path, name: str) -> Path | None:
    """The regular file ``name`` in the manifest's own folder (a plain name, no link out of it),
    or None."""
    if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
        return None
    folder = manifest_path.resolve().parent
    candidate = folder / name
    if candidate.is_symlink() or not candidate.is_file() or candidate.resolve().parent != folder:
        return None
    return candidate


def out_name(doc: dict) -> str:
    return str((doc.get("output") or {}).get("name", "the published file"))[:200]
