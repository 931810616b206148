"""Excel .xlsx (openpyxl): the first sheet, or one named with --sheet. Written back in place (the
same workbook: styles, formulas and other sheets kept, only QI cells set) when the input is
Excel, else as a new workbook."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..read_limits import Damaged, ForeignBytes, ReadLimitError, cell_cap, check_decompressed
from .file_table import Meta
from .formats import Format
from .typed_frames import is_missing, is_numeric, need, typed_table

__all__ = ["FORMATS", "ExcelMeta"]


@dataclass
class ExcelMeta(Meta):
    sheet: str = ""  # the worksheet read (written back in place)
    other_sheets: list = field(
        default_factory=list
    )  # the workbook's other sheets (published as they came)
    integer_columns: list = field(default_factory=list)  # columns of integer cells only
    positional = True  # formulas refer to cells by position: a shuffled copy is a new workbook

    def read_options(self, path=None) -> dict:
        return {"sheet": self.sheet} if self.sheet else {}  # the sheet protected, not the first


def _sheet(wb, p: Path, sheet):
    """The worksheet read: the first, or the one named (one line naming the sheets otherwise)."""
    if sheet is not None and sheet not in wb.sheetnames:
        raise InputError(f"no sheet {sheet!r} in {p.name}; its sheets: {', '.join(wb.sheetnames)}")
    return wb.worksheets[0] if sheet is None else wb[sheet]


def read(p: Path, *, missing=(), sheet=None):
    import pandas as pd

    openpyxl = need("openpyxl", "reading Excel files")
    wb = openpyxl.load_workbook(p, read_only=True, data_only=True)
    try:
        ws = _sheet(wb, p, sheet)
        rows = list(ws.iter_rows(values_only=True))
        title = ws.title
        others = [name for name in wb.sheetnames if name != title]
    finally:
        wb.close()
    while rows and all(v is None for v in rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(f"input file is empty: {p}")
    header = ["" if v is None else str(v) for v in rows[0]]
    body = [list(r[: len(header)]) + [None] * (len(header) - len(r)) for r in rows[1:]]
    integer = [
        name
        for j, name in enumerate(header)
        if all(
            isinstance(r[j], int) and not isinstance(r[j], bool) for r in body if r[j] is not None
        )
    ]
    frame = pd.DataFrame(body, columns=header, dtype=object).infer_objects()
    for j, name in enumerate(
        header
    ):  # integers with blank cells: nullable integers, not floats (100.0)
        if (
            name in integer
            and any(r[j] is None for r in body)
            and any(r[j] is not None for r in body)
            and header.count(name) == 1
        ):
            frame[name] = pd.array([r[j] for r in body], dtype="Int64")
    return typed_table(
        frame,
        "excel",
        p,
        ExcelMeta(sheet=title, integer_columns=integer, other_sheets=others),
        missing,
    )


def write(frame, tmp, meta, path, published) -> None:
    """A new workbook of one sheet."""
    import io as stdio

    import pandas as pd

    openpyxl = need("openpyxl", "writing Excel files")
    buffer = stdio.BytesIO()  # pandas picks the engine by suffix, and the temporary file's is .tmp
    frame.to_excel(buffer, index=False, engine="openpyxl")
    text = [
        j + 1
        for j, c in enumerate(frame.columns)
        if not pd.api.types.is_numeric_dtype(frame[c].dtype)
    ]
    if not text:
        Path(tmp).write_bytes(buffer.getvalue())
        return
    buffer.seek(0)
    wb = openpyxl.load_workbook(buffer)
    ws = wb.active
    for j in text:  # openpyxl takes a string starting with '=' for a formula: text stays text
        for (cell,) in ws.iter_rows(min_row=2, min_col=j, max_col=j):
            _keep_text(cell)
    wb.save(tmp)


def _keep_text(cell) -> None:
    """A cell whose value is text starting with '=' holds that text, not a formula."""
    if isinstance(cell.value, str) and cell.value.startswith("=") and cell.data_type == "f":
        cell.data_type = "s"


def write_in_place(table, published: dict, tmp, path, kept=()) -> None:
    """Excel to Excel: the workbook is loaded and only the QI cells of the first (or chosen) sheet
    get new values, so styles, formulas elsewhere and other sheets are kept (``kept``: columns
    whose unchanged values keep their text; a cell's value is its own here)."""
    openpyxl = need("openpyxl", "writing Excel files")
    wb = openpyxl.load_workbook(table.path)
    ws = wb[table.meta.sheet]
    column_of = {name: j + 1 for j, name in enumerate(table.header) if name not in table.duplicates}
    for name, values in published.items():
        integer = name in table.meta.integer_columns
        j = column_of[name]
        numeric = is_numeric(values)
        for i, v in enumerate(values):
            if not numeric:  # a category: the cell value as it was in the column
                cell = ws.cell(row=i + 2, column=j)
                cell.value = None if is_missing(v) else v
                _keep_text(cell)
                continue
            v = float(v)
            ws.cell(row=i + 2, column=j).value = int(v) if integer and v.is_integer() else v
    wb.save(tmp)


def header(p: Path, *, sheet=None) -> list:
    """The first row of the sheet ``read`` reads (the first, or ``sheet``): its names."""
    openpyxl = need("openpyxl", "reading Excel files")
    wb = openpyxl.load_workbook(p, read_only=True, data_only=True)
    try:
        ws = _sheet(wb, p, sheet)
        first = next(ws.iter_rows(max_row=1, values_only=True), None)
    finally:
        wb.close()
    if first is None:
        raise InputError(f"input file is empty: {p}")
    return ["" if v is None else str(v) for v in first]


_MAGIC = b"PK\x03\x04"  # a zip archive's first bytes (a workbook is one)
_ZIP_MEMBERS = 10_000
#: an Excel cell as openpyxl's reader holds it before the frame is built (a Python object in a
#: row tuple)
_CELL_BYTES = 64
_CHUNK = 1 << 20


def check_header(f, name: str, size: int) -> None:
    """What the workbook's zip directory says its members inflate to, and the cells each sheet
    spans, fit the limits (``microagg.read_limits``)."""
    import zipfile

    head = f.read(4)
    if head != _MAGIC:
        raise ForeignBytes(head + f.read(60))
    f.seek(0)
    try:
        archive = zipfile.ZipFile(f)
    except zipfile.BadZipFile as exc:
        raise Damaged(str(exc)) from None
    with archive:
        members = archive.infolist()
        if len(members) > _ZIP_MEMBERS:
            raise Damaged(f"it holds {len(members):,} files (a workbook holds a few)")
        # zipfile never inflates a member past the size its directory gives (then checks its CRC)
        check_decompressed(name, sum(m.file_size for m in members))
        for member in members:
            if re.fullmatch(r"xl/worksheets/[^/]+\.xml", member.filename):
                rows, columns = _sheet_extent(archive, member.filename)
                cap, why = cell_cap(_CELL_BYTES)
                if cap is not None and rows * columns > cap:
                    sheet = member.filename[len("xl/worksheets/") : -4]
                    raise ReadLimitError(
                        f"cannot read {name}: its {sheet} spans {rows:,} rows × {columns:,} "
                        f"columns, more cells than {why} (blank cells count: the reader fills them)"
                    )


# numbers read whole (a sheet claiming 10^9 rows must not read as 10^7): the cap then refuses them
_DIMENSION = re.compile(
    rb"<(?:\w+:)?dimension\s[^>]*?ref=\"([A-Z]{1,9})(\d{1,30})(?::([A-Z]{1,9})(\d{1,30}))?\""
)
_ROW = re.compile(rb"<(?:\w+:)?row\s[^>]*?\br=\"(\d{1,30})\"")
_CELL_COLUMN = re.compile(rb"<(?:\w+:)?c\s[^>]*?\br=\"([A-Z]{1,9})\d")


def _column_number(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n


def _sheet_extent(archive, member: str) -> tuple[int, int]:
    """(rows, columns) a worksheet spans: its declared dimension or its farthest row and cell,
    whichever is larger (a reader fills the blank cells of that rectangle); one streaming pass
    over its XML by regular expressions (a tenth of an XML parser's time: the reader parses it
    after anyway)."""
    rows, letters, tail = 0, set(), b""
    try:
        with archive.open(member) as stream:
            while True:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    break
                text = tail + chunk
                tail = text[-256:]  # a tag cut between two chunks is read whole with the next one
                for match in _DIMENSION.finditer(text):
                    for column, row in (
                        (match.group(1), match.group(2)),
                        (match.group(3), match.group(4)),
                    ):
                        if column:
                            letters.add(column)
                            rows = max(rows, int(row))
                found = _ROW.findall(text)
                if found:
                    rows = max(rows, max(map(int, found)))
                letters.update(_CELL_COLUMN.findall(text))
    except Exception as exc:  # noqa: BLE001 - OSError, EOFError, zipfile's CRC and size checks (BadZipFile)
        raise Damaged(f"{member}: {exc}") from None
    return rows, max(map(_column_number, letters), default=0)


FORMATS = (
    Format(
        "excel",
        "Excel",
        (".xlsx",),
        read,
        write,
        family="excel",
        rank=60,
        read_options=("sheet",),
        write_same=write_in_place,
        read_by="openpyxl",
        magic=(_MAGIC,),
        magic_means="a zip archive (an Excel workbook is one)",
        check_header=check_header,
        header=header,
    ),
)
