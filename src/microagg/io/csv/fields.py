"""A CSV file's columns from its bytes: the texts of a column's fields grouped into distinct
values (pyarrow and the compiled kernels of ``microagg.kernels.csv_scan``: no Python string per
field), and each column typed as the pipeline sees it (numbers, integers, codes with leading zeros
kept as text, missing tokens)."""

from __future__ import annotations

import re

from ...errors import InputError
from .dialect import GROUPED, INTEGER, LEADING_ZERO, NUMBER, unquote


class MixedMarks(InputError):
    """A column whose numbers are written with both decimal marks (12,5 and 70.5)."""


def typed_text_frame(frame, decimal: str = ".", missing=()):
    """A frame whose cells are the texts of CSV fields, typed by the column rules of ``read``
    (numbers, integers, codes with leading zeros kept as text, tokens): for readers that stream a
    CSV in chunks and must see the columns as ``read`` sees them."""
    import pandas as pd

    header = [str(c) for c in frame.columns]
    tokens = {t.strip() for t in missing}
    data = {}
    for name, c in zip(header, frame.columns, strict=True):
        values = ["" if v is None else str(v) for v in frame[c].tolist()]
        data[name] = _named(name, typed_column, *factorized(values), decimal, tokens)
    return pd.DataFrame(data, columns=header)


def distinct_texts(meta, starts, ends, flags=None, arrow: bool = False):
    """(codes, distinct values): the values (unquoted text) of the fields [starts, ends) of the
    file's text (``meta``: its CsvMeta) as the index of each in a list of its distinct values.
    Unquoted fields are encoded by pyarrow from the file's bytes (a Python string per distinct
    value only)."""
    import numpy as np
    import pandas as pd

    from ...kernels import csv_scan

    buf = meta.text
    array = np.frombuffer(buf, dtype=np.uint8)
    if flags is None:
        flags = csv_scan.text_flags(array, starts, ends, ord(meta.dialect.quotechar))
    if (
        not flags["quoted"] and arrow and not meta.cr_only
    ):  # the texts' bytes hashed, no dictionary of strings
        grouped = csv_scan.group_codes(array, starts, ends)
        if grouped is not None:
            codes, first = grouped
            return codes, csv_scan.strings(array, starts[first], ends[first])
    if not flags["quoted"]:
        encoded = csv_scan.strings(array, starts, ends).dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        if arrow and not meta.cr_only:  # ``arrow``: the distinct texts may stay a pyarrow array
            return codes, encoded.dictionary
        distinct = encoded.dictionary.to_numpy(
            zero_copy_only=False
        ).tolist()  # (to_pylist: 10x slower)
    else:
        values = [
            unquote(buf[a:b].decode("utf-8", "surrogatepass"))
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        distinct = uniques.tolist()
    if meta.cr_only:
        distinct = [v.replace("\n", "\r") for v in distinct]
    return codes, distinct


def field_texts(meta, starts, ends):
    """The values (unquoted text) of the fields [starts, ends): an object array of strings."""
    codes, distinct = distinct_texts(meta, starts, ends)
    return object_array(distinct)[codes]


def object_array(values: list):
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def typed_frame_of(meta, header, duplicates, decimal, missing, written=None):
    """The pipeline's frame (see ``typed_column``); a column of plain numbers (no blanks,
    quotes, spaces, tokens, codes with leading zeros) is parsed from the file's bytes at C speed.
    ``written``: for a file just written, what the writer put in each published column
    (``writer.Written`` by name): a column whose every field is found to hold the very bytes of
    its text (``CsvMeta.as_written``) is typed from its distinct texts, each parsed once, since a
    field's value is its bytes' (the same values, the file's own, at a third of the parsing)."""
    import pandas as pd

    tokens = {t.strip() for t in missing}
    given = written or {}
    data, plain_integers, mixed = {}, set(), {}
    for j, name in enumerate(header):
        if name in duplicates:
            continue
        found = meta.as_written(j, given[name]) if name in given else None
        if found is not None:
            data[name] = _named(name, _typed_by_codes, meta, *found, decimal, tokens, mixed=mixed)
            continue
        data[name], plain = _named(
            name, _typed_fields, meta, *meta.field_bounds(j), decimal, tokens, mixed=mixed
        )
        if plain:
            plain_integers.add(j)
    meta.plain_integers = frozenset(plain_integers)
    frame = pd.DataFrame(data, columns=[c for c in header if c not in duplicates], copy=False)
    frame.attrs[MIXED_MARKS] = mixed
    return frame


#: ``frame.attrs`` key of a CSV frame's columns whose numbers mix decimal marks: column -> why.
#: Such a column is read as its text, so that a column published unchanged comes out byte for
#: byte; it is refused where it would be read as numbers (a quasi-identifier, named or chosen).
MIXED_MARKS = "mixed_marks"


def _named(name, typed, *args, mixed: dict | None = None):
    """``typed(*args)``, a column whose numbers mix decimal marks named in its error; with
    ``mixed`` (a dict), such a column is typed as text instead and ``mixed[name]`` says why."""
    try:
        return typed(*args)
    except MixedMarks as exc:
        if mixed is None:
            raise MixedMarks(f"column {name} {exc}") from None
        mixed[name] = f"column {name} {exc}"
        return typed(*args, mixed_as_text=True)


def _typed_fields(meta, starts, ends, decimal: str, tokens: set, mixed_as_text: bool = False):
    """(the fields [starts, ends) of the file's text typed as a column (``typed_frame_of``),
    whether every field is a plain integer: a sign and digits, no leading zero)."""
    import numpy as np

    from ...kernels import csv_scan

    array = np.frombuffer(meta.text, dtype=np.uint8)
    # the plain columns as numpy arrays, not a Series each (~0.2 ms a column with the frame's
    # construction: a 12,000-column file, issue 57)
    fast = csv_scan.integers(array, starts, ends, plain=True)  # the common column, in one pass
    if fast is not None:
        return fast, True
    flags = csv_scan.text_flags(array, starts, ends, ord(meta.dialect.quotechar))
    if (
        flags["plain"]
        and not flags["empty"]
        and not flags["quoted"]
        and not flags["leading_zero"]
        and (not flags["comma"] if decimal == "." else not flags["fraction"])
    ):  # (under a decimal comma, a point is a thousands separator or a disagreeing mark)
        fast = _plain_numbers(csv_scan, array, starts, ends, flags)
    if fast is not None:
        return fast, False
    codes, distinct = distinct_texts(meta, starts, ends, flags)
    return typed_column(codes, distinct, decimal, tokens, mixed_as_text), False


def _typed_by_codes(meta, codes, texts, decimal: str, tokens: set, mixed_as_text: bool = False):
    """A column whose field i holds the bytes of ``texts[codes[i]]`` (the distinct texts, each
    used), typed as its fields are: the distinct texts typed as a column of their own (the
    column's rules see the same set of texts), then one value per field."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    data, offsets = text_buffers([texts])
    alone = replace(meta, text=data.tobytes(), checked={})  # the distinct texts one after another
    column, _ = _typed_fields(
        alone, offsets[:-1].copy(), offsets[1:].copy(), decimal, tokens, mixed_as_text
    )
    if isinstance(column, np.ndarray):
        return column[codes]
    return pd.Series(column.to_numpy()[codes], dtype=column.dtype)


def _plain_numbers(csv_scan, array, starts, ends, flags):
    """Every cell a plain number: int64 or float64 values parsed from the bytes as Python's int
    and float read them (pyarrow parses floats exactly so), or None to take the careful path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not flags["fraction"] and not flags["comma"]:
        return csv_scan.integers(array, starts, ends)
    texts = csv_scan.strings(array, starts, ends)
    if flags["comma"]:  # a decimal comma
        texts = pc.replace_substring(texts, ",", ".")
    try:
        return pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, ValueError):
        return None


def factorized(values: list):
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return codes, uniques.tolist()


def typed_column(codes, distinct: list, decimal: str, tokens: set, mixed_as_text: bool = False):
    """A column (each row's index in its list of distinct texts) as the pipeline sees it: numeric
    when every non-missing cell is a number under the file's decimal mark (blank cells and
    ``missing`` tokens are missing). Integer columns without missing cells are int64; numbers
    with leading zeros (codes such as 00123) stay text; a column numeric but for a few other
    tokens keeps the numbers as floats and the tokens as text, so the column rules (``columns``)
    can name them. Each distinct text is looked at once."""
    import numpy as np
    import pandas as pd

    number, grouped = NUMBER[decimal], GROUPED.get(decimal)
    rows = len(codes)
    counts = np.bincount(codes, minlength=len(distinct))
    stripped = [v.strip() for v in distinct]
    is_missing = np.array([v == "" or v in tokens for v in stripped], dtype=bool)
    is_number = np.array(
        [
            not m and bool(number.fullmatch(v) or (grouped and grouped.fullmatch(v)))
            for v, m in zip(stripped, is_missing, strict=True)
        ],
        dtype=bool,
    )
    if grouped is not None:
        try:
            _check_marks(stripped, is_number, decimal)
        except MixedMarks:
            if not mixed_as_text:
                raise
            return pd.Series(object_array(distinct)[codes], dtype=object)  # (``MIXED_MARKS``)
    n_number = int(counts[is_number].sum()) if len(distinct) else 0
    n_missing = int(counts[is_missing].sum()) if len(distinct) else 0
    others = rows - n_number - n_missing

    def as_text():
        return pd.Series(object_array(distinct)[codes], dtype=object)

    if n_number and any(
        LEADING_ZERO.match(v) and not re.fullmatch(r"[+-]?0(?:[.,]\d*)?(?:[eE].*)?", v)
        for v, isnum in zip(stripped, is_number, strict=True)
        if isnum
    ):
        return as_text()  # a code such as a zip code: text
    if n_number == 0:
        if n_missing == rows and tokens & set(stripped):
            return pd.Series(np.full(rows, np.nan))
        return as_text()

    def parse(v):
        return float(v.replace(".", "").replace(",", ".")) if decimal == "," else float(v)

    if others == 0:
        if not n_missing and all(INTEGER.fullmatch(v) for v in stripped):
            try:
                ints = [int(v) for v in stripped]
            except ValueError:  # more digits than Python converts (4,300): not a number to protect
                return as_text()
            if all(-(2**63) <= x < 2**63 for x in ints):
                return pd.Series(np.array(ints, dtype=np.int64)[codes])
            return pd.Series(
                object_array(ints)[codes], dtype=object
            )  # beyond int64: exact Python integers
        parsed = np.array(
            [np.nan if m else parse(v) for v, m in zip(stripped, is_missing, strict=True)],
            dtype=np.float64,
        )
        return pd.Series(parsed[codes], dtype=np.float64)
    # numeric but for some tokens: numbers as floats, the rest as the text it is
    mixed = object_array(
        [
            np.nan if m else (parse(v) if isnum else distinct[i])
            for i, (v, m, isnum) in enumerate(zip(stripped, is_missing, is_number, strict=True))
        ]
    )
    return pd.Series(mixed[codes], dtype=object)


def _check_marks(stripped: list, is_number, decimal: str) -> None:
    """Under the decimal comma, a number written with a decimal point (70.5: not groups of
    three digits) beside numbers written with the comma (12,5) or with points between thousands
    (95.250): the column's marks disagree, and no reading of it is safe."""
    other = "." if decimal == "," else ","
    disagreeing = next(
        (
            v
            for v, isnum in zip(stripped, is_number, strict=True)
            if not isnum and other in v and NUMBER[other].fullmatch(v)
        ),
        None,
    )
    if disagreeing is None:
        return
    agreeing = next(
        (
            v
            for v, isnum in zip(stripped, is_number, strict=True)
            if isnum and (decimal in v or other in v)
        ),
        None,
    )
    if agreeing is not None:
        raise MixedMarks(
            f"mixes decimal marks: {agreeing[:40]!r} is written with the decimal mark "
            f"{decimal!r}, {disagreeing[:40]!r} with {other!r}; write every number of a column "
            "with one mark (or give --decimal)"
        )


def text_buffers(columns: list):
    """(bytes, offsets) of pyarrow string arrays one after another: text i is
    bytes[offsets[i]:offsets[i + 1]]."""
    import numpy as np
    import pyarrow as pa

    if not columns:
        return np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    texts = pa.concat_arrays([c.cast(pa.large_string()) for c in columns])
    texts = pa.concat_arrays([texts]) if texts.offset else texts
    _, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[: len(texts) + 1]
    data = (
        np.frombuffer(data, dtype=np.uint8)
        if data is not None and data.size
        else np.zeros(1, dtype=np.uint8)
    )
    return data, offsets
