"""Opening a publication's input: every target path and every column an option names checked,
the file read with its format's own library, before any computation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..io.names import NAMING_OPTIONS, as_in_header, check_names, options_in_header

__all__ = [
    "Targets",
    "Opened",
    "open_input",
    "as_in_file",
    "NAMING_OPTIONS",
    "as_in_header",
    "check_names",
]


@dataclass(frozen=True)
class Targets:
    """Where a publication writes: the output, its manifest, and the optional report and labels."""

    output: Path
    manifest: Path | None
    report: Path | None = None
    labels: Path | None = None

    @classmethod
    def checked(
        cls, source: Path, output, *, report=None, labels=None, init=None, manifest: bool = True
    ) -> Targets:
        """Every path checked before any work: its format, its folder (writable, by a probe),
        never the input nor another file of the run."""
        from .. import io
        from ..manifest import path_for

        out = io.check_output_path(Path(output), source)
        if init is not None and io.same_file(out, Path(init)):
            raise InputError(f"refusing to write the output over the --init file {out}")
        report_path = None
        if report is not None:
            from ..report import check_report_path

            report_path = io.check_side_file(check_report_path(report), "report", source, out, init)
        labels_path = (
            None
            if labels is None
            else io.check_side_file(labels, "labels", source, out, report_path, init)
        )
        manifest_path = None
        if manifest:
            manifest_path = io.check_side_file(
                path_for(out), "manifest", source, out, report_path, labels_path, init
            )
        return cls(out, manifest_path, report_path, labels_path)


@dataclass
class Opened:
    """An input read and its publication's targets checked: what every door holds before the run."""

    table: object  # io.Table
    targets: Targets
    options: dict  # the run options, column names as the file spells them
    read_options: dict


def open_input(
    source: Path,
    output,
    options: dict,
    run,
    *,
    read_options: dict,
    report=None,
    labels_out=None,
    manifest: bool = True,
    init=None,
) -> Opened:
    """Check the targets, read the input, check the conversion and the columns: every check that
    needs no computation, before any."""
    from .. import io

    source = Path(source)
    if not source.exists():
        raise InputError(f"input file not found: {source}")
    io.format_of(source)
    targets = Targets.checked(
        source, output, report=report, labels=labels_out, init=init, manifest=manifest
    )
    check_names(options, io.read_header(source, **read_options), source)  # before the body is read
    table = io.read(source, **read_options)
    io.check_writable(table, targets.output)
    options = as_in_file(options, table)
    unknown = [c for c in options.get("household") or [] if c not in table.frame.columns]
    if unknown:
        raise InputError(f"unknown household column(s): {', '.join(map(str, unknown))}")
    return Opened(table, targets, options, dict(read_options))


def as_in_file(options: dict, table) -> dict:
    """The column names of the options as the file's header spells them (a hand-written header
    'x, y' holds ' y'); a duplicated header name named in an option is an error."""
    out = {**options, **options_in_header(options, table.header)}
    table.check_columns(out.get("columns"))
    table.check_columns(out.get("strata"), "stratum")
    table.check_columns(
        [out["sample_weight"]] if isinstance(out.get("sample_weight"), str) else [], "sample weight"
    )
    table.check_columns(
        (out.get("categorical") or [])
        + list(out.get("ordinal") or [])
        + (out.get("continuous") or [])
    )
    table.check_columns(
        (out.get("keys") or []) + (out.get("sensitive") or []), "key or sensitive column"
    )
    return out
