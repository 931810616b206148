"""Excel .xlsx (openpyxl): the first sheet, or one named with --sheet. Written back in place (the
same workbook: styles, formulas and other sheets kept, only QI cells set) when the input is
Excel, else as a new workbook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .formats import Format
from .table import Meta
from .typed import is_missing, is_numeric, need, typed_table

__all__ = ["FORMATS", "ExcelMeta"]


@dataclass
class ExcelMeta(Meta):
    sheet: str = ""  # the worksheet read (written back in place)
    other_sheets: list = field(default_factory=list)  # the workbook's other sheets (published as they came)
    integer_columns: list = field(default_factory=list)  # columns of integer cells only


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
    integer = [name for j, name in enumerate(header)
               if all(isinstance(r[j], int) and not isinstance(r[j], bool) for r in body if r[j] is not None)]
    frame = pd.DataFrame(body, columns=header, dtype=object).infer_objects()
    for j, name in enumerate(header):  # integers with blank cells: nullable integers, not floats (100.0)
        if name in integer and any(r[j] is None for r in body) and any(r[j] is not None for r in body) \
                and header.count(name) == 1:
            frame[name] = pd.array([r[j] for r in body], dtype="Int64")
    return typed_table(frame, "excel", p, ExcelMeta(sheet=title, integer_columns=integer, other_sheets=others), missing)


def write(frame, tmp, meta, path, published) -> None:
    """A new workbook of one sheet."""
    import io as stdio

    import pandas as pd

    openpyxl = need("openpyxl", "writing Excel files")
    buffer = stdio.BytesIO()  # pandas picks the engine by suffix, and the temporary file's is .tmp
    frame.to_excel(buffer, index=False, engine="openpyxl")
    text = [j + 1 for j, c in enumerate(frame.columns) if not pd.api.types.is_numeric_dtype(frame[c].dtype)]
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


def write_in_place(table, published: dict, tmp, path) -> None:
    """Excel to Excel: the workbook is loaded and only the QI cells of the first (or chosen) sheet
    get new values, so styles, formulas elsewhere and other sheets are kept."""
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


FORMATS = (Format("excel", "Excel", (".xlsx",), read, write, family="excel", rank=60, read_options=("sheet",),
                  write_same=write_in_place, magic=(b"PK\x03\x04",), header=header),)
