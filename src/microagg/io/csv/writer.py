"""Writing a CSV file: the input's bytes with the QI cells replaced, copied field by field by a
compiled kernel (``microagg.kernels.csv_scan.assemble``), each published column's distinct values
formatted once in the file's decimal mark; or a typed frame from another format as plain CSV."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ..file_table import Table
from ..typed_frames import is_missing, is_numeric
from .dialect import INTEGER
from .fields import distinct_texts, field_texts, object_array, text_buffers
from .meta import CsvDialect, CsvMeta, written_sep


@dataclass(frozen=True)
class Written:
    """A published column as the writer wrote it: ``codes`` (int32, one per row in the order
    written) index ``texts`` (a pyarrow string array: each distinct value's text as written, the
    last one the empty field of a missing value). Distinct values may share a text (0.0 and -0.0
    in an integer column are both '0')."""

    codes: object
    texts: object


def format_number(value: float, integer: bool, decimal: str) -> str:
    """A published number's text: an integer when the column held integers and the value is
    integral, else the shortest text that reads back as the same float64 (Python's repr)."""
    v = float(value)
    if integer and v.is_integer() and abs(v) < 2.0**63:
        text = str(int(v))
    else:
        text = repr(v)
    return text.replace(".", ",") if decimal == "," else text


def _integer_texts(meta: CsvMeta, j: int) -> bool:
    """Every non-blank field of column ``j`` is an integer (so integral values are written as
    integers): known without a pass when the reader parsed every field as a plain integer."""
    import numpy as np

    from ...kernels import csv_scan

    if j in meta.plain_integers:
        return True
    starts, ends = meta.field_bounds(j)
    flags = csv_scan.text_flags(
        np.frombuffer(meta.text, dtype=np.uint8), starts, ends, ord(meta.dialect.quotechar)
    )
    if not flags["quoted"] and not flags["wide_char"]:
        return bool(flags["integers"])
    _, distinct = distinct_texts(meta, starts, ends, flags)
    return all(INTEGER.fullmatch(t) for t in distinct if t.strip())


def _number_codes(values):
    """(codes per row, the distinct float64 values) of a numeric column, by their bits (-0.0 is
    not 0.0); a missing value's code -1."""
    import numpy as np
    import pandas as pd

    array = np.asarray(values).astype(np.float64)
    codes, bits = pd.factorize(array.view(np.int64))
    codes[np.isnan(array)] = -1
    return codes, bits.view(np.float64)


def _formatted_numbers(columns: dict, decimal: str) -> dict:
    """name -> (codes per row, the distinct values' texts) of each numeric column of ``columns``
    (name -> (values, integer)): every column's distinct values formatted by one
    ``number_texts`` call per kind (each text is its value's alone; one call per column cost ~0.3
    ms: 12,000 columns, issue 57)."""
    import numpy as np

    coded = {name: (_number_codes(values), integer) for name, (values, integer) in columns.items()}
    out = {}
    for integer in (False, True):
        names = [name for name, (_, flag) in coded.items() if bool(flag) == integer]
        if not names:
            continue
        distinct = [coded[name][0][1] for name in names]
        texts = number_texts(np.concatenate(distinct), integer, decimal)
        start = 0
        for name, values in zip(names, distinct, strict=True):
            out[name] = (coded[name][0][0], texts.slice(start, len(values)))
            start += len(values)
    return out


def _published_texts(values, integer: bool, numeric: bool, d: CsvDialect, sep: str, formatted=None):
    """(codes per row, the distinct texts as written (a pyarrow string array, quotes doubled),
    which of them are always quoted): a missing value, as a suppressed stratum publishes, is an
    empty field; a text holding the separator, a quote or a line break is quoted. Numbers are
    formatted by ``format_number`` (each distinct value once; pyarrow formats the common ones);
    ``formatted``: their (codes, texts) already (``_formatted_numbers``)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    q = d.quotechar
    array = np.asarray(values)
    if numeric and array.dtype.kind in "fiu":
        if formatted is None:
            codes, distinct = _number_codes(array)
            formatted = codes, number_texts(distinct, integer, d.decimal)
        codes, texts = formatted
    else:
        objects = np.asarray(values, dtype=object)
        codes, distinct = pd.factorize(objects)
        if any(
            isinstance(v, float) and v == 0 for v in distinct.tolist()
        ):  # 0.0 and -0.0 hash alike
            keys = object_array(
                [
                    (type(v).__name__, repr(v)) if not is_missing(v) else None
                    for v in objects.tolist()
                ]
            )
            codes, _ = pd.factorize(keys)
            firsts = np.unique(codes[codes >= 0], return_index=True)[1]
            distinct = pd.Index(objects[np.flatnonzero(codes >= 0)[firsts]], dtype=object)
        listed = [
            format_number(v, integer, d.decimal) if numeric else str(v) for v in distinct.tolist()
        ]
        texts = pa.array([t.replace(q, q + q) for t in listed], pa.string())
    texts = pa.concat_arrays([texts, pa.array([""], pa.string())])  # the missing value
    codes = np.where(codes < 0, len(texts) - 1, codes).astype(np.int32)
    needs = [sep, q, "\n", "\r"]
    if numeric and array.dtype.kind == "f":  # a number's text holds none of the others
        needs = [piece for piece in needs if piece in NUMBER_TEXT_CHARACTERS]
    wrap = np.zeros(len(texts), dtype=bool)
    for piece in needs:
        wrap |= _contains(texts, piece)
    return codes, texts, wrap


#: every character a number's text (``number_texts``) may hold: digits, the decimal mark, the
#: sign, the exponent, and 'inf' / 'nan'
NUMBER_TEXT_CHARACTERS = frozenset("0123456789.,+-eEinfa")


def _missing_as_read(meta: CsvMeta, j: int, codes, texts, wrap, sep: str):
    """(codes, texts, wrap) with each missing published value (the empty text, the last) whose
    input field was missing too (blank, spaces, or a declared ``missing`` token) written as that
    field's text: a missing QI value comes out as it went in, byte for byte."""
    import numpy as np
    import pyarrow as pa

    empty = len(texts) - 1
    rows = np.flatnonzero(codes == empty)
    if not rows.size:
        return codes, texts, wrap
    tokens = {str(t).strip() for t in meta.missing}
    starts, ends = meta.field_bounds(j)
    read = field_texts(meta, np.ascontiguousarray(starts[rows]), np.ascontiguousarray(ends[rows]))
    keep = [i for i, t in enumerate(read.tolist()) if t and (not t.strip() or t.strip() in tokens)]
    if not keep:
        return codes, texts, wrap
    distinct = sorted({read[i] for i in keep})
    at = {t: empty + 1 + i for i, t in enumerate(distinct)}
    codes = codes.copy()
    codes[rows[keep]] = [at[read[i]] for i in keep]
    q = meta.dialect.quotechar
    extra = pa.array([t.replace(q, q + q) for t in distinct], pa.string())
    needs = [sep, q, "\n", "\r"]
    quoted = np.array([any(piece in t for piece in needs) for t in distinct], dtype=bool)
    return codes, pa.concat_arrays([texts, extra]), np.concatenate([wrap, quoted])


def _contains(texts, piece: str):
    import pyarrow.compute as pc

    return pc.match_substring(texts, piece).to_numpy(zero_copy_only=False)


def number_texts(numbers, integer: bool, decimal: str):
    """``format_number`` of every value, as a pyarrow string array: pyarrow formats integers and
    the numbers whose shortest text has no exponent; Python's repr the others (its exponent
    form, 1e-05 or 1e+16, is not pyarrow's)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    finite = np.isfinite(numbers)
    whole = finite & (numbers == np.round(numbers))
    as_integer = whole & integer & (np.abs(numbers) < 2.0**63)
    fixed = finite & ~whole & (np.abs(numbers) >= 1e-4) & (np.abs(numbers) < 1e16)
    texts = pc.cast(pa.array(numbers), pa.string())
    fixed &= ~_contains(texts, "e")
    texts = pc.if_else(
        pa.array(as_integer),
        pc.cast(pa.array(np.where(as_integer, numbers, 0).astype(np.int64)), pa.string()),
        texts,
    )
    other = np.flatnonzero(~(as_integer | fixed))
    if len(other):
        exceptions = np.full(len(numbers), None, dtype=object)
        exceptions[other] = [format_number(v, integer, ".") for v in numbers[other].tolist()]
        texts = pc.if_else(pa.array(as_integer | fixed), texts, pa.array(exceptions, pa.string()))
    if decimal == ",":
        texts = pc.replace_substring(texts, ".", ",")
    return texts


def csv_bytes(table: Table, published: dict, gz: bool, sep: str | None = None) -> bytes:
    """The file's bytes with the QI cells replaced; ``sep``: another separator (a field holding
    it is quoted, every other field keeps its text)."""
    import io as stdio

    out = stdio.BytesIO()
    _write_csv(out, table, published, gz, sep)
    return out.getvalue()


def _published_numbers(meta: CsvMeta, index: dict, published: dict) -> tuple[dict, dict]:
    """(name -> (numeric, integer texts) of each published column, name -> its numbers'
    ``_formatted_numbers`` when there are many columns)."""
    import numpy as np

    kinds = {}
    for name, values in published.items():
        numeric = is_numeric(values)
        kinds[name] = numeric, numeric and _integer_texts(meta, index[name])
    if len(published) < _FORMATTED_AT_ONCE:
        return kinds, {}
    numbers = {
        name: (values, kinds[name][1])
        for name, values in published.items()
        if kinds[name][0] and np.asarray(values).dtype.kind in "fiu"
    }
    return kinds, _formatted_numbers(numbers, meta.dialect.decimal)


#: from this many published columns on, their numbers are formatted together
_FORMATTED_AT_ONCE = 64


def _write_csv(stream, table: Table, published: dict, gz: bool, sep: str | None = None) -> dict:
    """Write the file's bytes with the QI cells replaced to ``stream`` (see ``csv_bytes``): the
    input's text, copied field by field at C speed, with each published column's distinct values
    formatted once. Returns what each published column holds as written (``Written``)."""
    import numpy as np

    from ...kernels import csv_scan

    meta = table.meta
    d = meta.dialect
    q = d.quotechar
    sep = d.sep if sep is None else sep
    if not sep.isascii() or len(sep) != 1:
        raise InputError(f"cannot write a CSV file separated by {sep!r}")
    h = len(table.header)
    index = {name: j for j, name in enumerate(table.header) if name not in table.duplicates}
    qcol = np.full(h, -1, dtype=np.int64)
    rows = meta.rows
    codes = np.zeros((len(published), rows), dtype=np.int32)
    columns, wraps, base, written = [], [], 0, {}
    kinds, formatted = _published_numbers(meta, index, published)
    for c, (name, values) in enumerate(published.items()):
        j = index[name]
        qcol[j] = c
        numeric, integer = kinds[name]
        column_codes, texts, wrap = _published_texts(
            values, integer, numeric, d, sep, formatted.get(name)
        )
        if numeric:  # a value missing in the input stays as the input wrote it
            column_codes, texts, wrap = _missing_as_read(meta, j, column_codes, texts, wrap, sep)
        written[name] = Written(column_codes, texts)
        codes[c] = np.arange(base, base + rows, dtype=np.int32)
        base += rows
        columns.append(texts)
        wraps.append(wrap[column_codes])
    tbuf, toff = _in_rows(columns, written)
    wrap = np.concatenate(wraps or [np.zeros(1, dtype=bool)]).astype(np.uint8)
    if sep == d.sep:
        head = meta.text[: meta.head_end]
    else:  # the header's fields holding the new separator are quoted
        fields = [
            q + f.replace(q, q + q) + q if sep in f and not f.startswith(q) else f
            for f in meta.header_raw
        ]
        head = (
            sep.join(fields).encode("utf-8", "surrogatepass")
            + meta.text[meta.header_term : meta.head_end]
        )
    body = csv_scan.assemble(
        np.frombuffer(meta.text, dtype=np.uint8),
        np.frombuffer(head, dtype=np.uint8),
        meta.spans,
        meta.row_order(),
        meta.tails,
        qcol,
        codes,
        tbuf,
        toff,
        wrap,
        ord(d.sep),
        ord(sep),
        ord(q),
    )
    if meta.cr_only:
        body = np.where(body == ord("\n"), np.uint8(ord("\r")), body)
    bom = "\ufeff".encode(d.encoding) if d.bom else b""
    if d.encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        body = body.tobytes().decode("utf-8", "surrogatepass").encode(d.encoding, "surrogatepass")
    if gz:  # the bytes of gzip.compress(data, mtime=0), in a stream (no copy of the data)
        import zlib

        zipped = zlib.compressobj(9, zlib.DEFLATED, 31)
        stream.write(zipped.compress(bom))
        stream.write(zipped.compress(memoryview(body)))
        stream.write(zipped.flush())
        return written
    stream.write(bom)
    stream.write(memoryview(body))
    return written


def _in_rows(columns: list, written: dict):
    """(bytes, offsets) of every published column's texts in row order, one column after
    another: laid out one column at a time (its distinct texts read at random, but within
    cache), so that the assembler reads them in sequence."""
    import numpy as np

    from ...kernels import csv_scan

    data, offsets = text_buffers(columns)
    firsts = np.cumsum([0] + [len(t) for t in columns], dtype=np.int64)[:-1]
    rows = [w.codes.astype(np.int64) + a for w, a in zip(written.values(), firsts, strict=True)]
    return csv_scan.texts_in_rows(data, offsets, rows)


def write_same(table: Table, published: dict, tmp, path, kept=()) -> dict:
    """CSV to CSV: the input's bytes with the QI cells replaced. A file named .tsv / .tab is
    tab-separated; any other name keeps the input's separator. Returns each published column's
    ``Written`` texts (for the read-back check)."""
    with open(tmp, "wb") as stream:
        return _write_csv(
            stream,
            table,
            _kept_texts(table, published, kept),
            gz=Path(path).name.lower().endswith(".gz"),
            sep=written_sep(table.meta.dialect.sep, path),
        )


def _kept_texts(table: Table, published: dict, kept) -> dict:
    """The published values with each column of ``kept`` (not a QI: a key with suppressed
    values, a recoded stratum) as text: a value that did not change is its field's own text
    ('37,50', '8' in a decimal-comma file), a changed one its published value's, a suppressed
    one missing."""
    import numpy as np
    import pandas as pd

    index = {name: j for j, name in enumerate(table.header) if name not in table.duplicates}
    out = dict(published)
    for name in kept:
        if name not in published or name not in index:
            continue
        values = np.asarray(published[name])
        same = _unchanged(values, table.frame[name].to_numpy())
        if not same.any():
            continue
        column = np.array(table.meta.texts(index[name]), dtype=object)  # the fields' own texts
        numeric = is_numeric(values)
        integer = numeric and _integer_texts(table.meta, index[name])
        for i in np.flatnonzero(~same).tolist():  # the changed ones, written anew
            v = values[i]
            column[i] = (
                None
                if pd.isna(v)
                else (format_number(v, integer, table.meta.dialect.decimal) if numeric else str(v))
            )
        out[name] = column
    return out


def _unchanged(values, before):
    """Which published values are the values read (a missing one never is: suppressed)."""
    import numpy as np
    import pandas as pd

    try:
        same = pd.Series(values, dtype=object) == pd.Series(before, dtype=object)
        return same.fillna(False).to_numpy(dtype=bool) & ~pd.isna(values) & ~pd.isna(before)
    except (TypeError, ValueError):
        return np.array(
            [_same_value(a, b) for a, b in zip(values.tolist(), before.tolist(), strict=True)],
            dtype=bool,
        )


def _same_value(a, b) -> bool:
    """A published value is the value read (missing values are never the same: suppressed)."""
    if is_missing(a) or is_missing(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def write(frame, tmp, meta, path, published) -> None:
    """A typed frame (from another format) as a plain CSV file."""
    compression = "gzip" if Path(path).name.lower().endswith(".gz") else None
    frame.to_csv(tmp, index=False, compression=compression)
