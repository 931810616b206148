"""The values the publication's stages pass on (``publication.stages``): the plan, the file as
read back, the file as published; and what the plan and the published file say (the columns
published unchanged, a workbook's other sheets, the reproduce command)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .opening import Targets

__all__ = [
    "Plan",
    "ReadBack",
    "PublishedFile",
    "unchanged_columns",
    "other_sheets",
    "manifest_command",
]


@dataclass
class PublishedFile:
    """What was published: the paths, the file as its reader read it back, and what it holds."""

    path: Path
    manifest: Path | None
    report: Path | None
    labels: Path | None
    read_back_by: str
    key_variables: list
    k_anonymous: bool
    smallest_frequency: int | None
    unchanged: list = field(default_factory=list)  # columns published as they came in
    other_sheets: list = field(
        default_factory=list
    )  # a workbook's sheets published as they came in
    shuffled: bool = False

    def __repr__(self) -> str:
        from ..display import published_repr

        return published_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's display: the file, its reader, its key variables' k-anonymity."""
        from ..display import published_html

        return published_html(self)


@dataclass(frozen=True)
class Plan:
    """The plan stage's value: what the publication will do, decided before any computation."""

    table: Any  # io.Table: the input as read
    targets: Targets
    options: dict  # the run options as given, column names as the file spells them
    params: dict  # the method's parameters (``init``: the labels of an --init file)
    run: Any  # options.Run, validated once, column names as the file spells them
    read_options: dict
    order: Any  # the written rows' order (a permutation: --shuffle), or None: the input's
    command: str  # the protect command the manifest holds
    input_name: str  # the input as the caller named it (the report and the command say it)
    interval_p: float = 10.0  # the audit's rank-interval percentage
    confirm: Any = None  # a replay's check of the new manifest before anything lands
    # the stages over a chunked table (``folder.chunked_stages``); None: a file read in memory
    chunked: Any = None


@dataclass(frozen=True)
class ReadBack:
    """The read_back stage's value: the staged output as its format's reader reads it, and its
    key variables as that reader groups them."""

    table: Any  # io.Table
    keys: Any  # DataFrame: the key variables, a blank or a declared missing token missing
    reader: str
    read_options: dict


def unchanged_columns(table, changed) -> list:
    """The columns of the file published as they came in (every column not protected nor
    recoded)."""
    changed = set(changed)
    return [c for c in table.header if c not in changed]


def other_sheets(table) -> list:
    """A workbook's sheets other than the one protected: published as they came in (named in the
    summary, the JSON and the manifest, so that a sheet holding the original values is seen)."""
    sheets = getattr(table.meta, "other_sheets", None)
    return list(sheets or [])


def manifest_command(input_name: str, output_name: str, options: dict, params: dict, order) -> str:
    """The protect command the manifest holds, to reproduce the publication
    (``microagg.reproduce``)."""
    from ..options import command_line

    return command_line(
        input_name,
        output_name,
        {**options, "shuffle": order is not None},
        {k: v for k, v in params.items() if k != "init"},
    )
