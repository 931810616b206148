"""The byte-level passes of the CSV reader and writer (``microagg.io.csv``), compiled (numba):
one scan of the file finds every record and field, columns are cut out of the file's bytes, and
the output is assembled from the input's bytes and the published cells. Python touches no field
one by one.

The scan reads fields by the rules of ``microagg.io.csv.dialect.split_records`` (RFC 4180 as
Python's csv and pandas read it): a field that starts with a quote is a quoted section ("" inside
is one quote) followed by any text up to the separator; a quote inside a field that does not
start with one is a plain character. A quoted section may hold separators and line breaks.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel

__all__ = ["scan", "text_flags", "strings", "integers", "assemble", "offset_type"]

_NL = 10
_CR = 13


@kernel
def _scan(buf, sep, quote, fill, rec_start, rec_term, rec_first, fstart):
    """Records and fields of ``buf``: returns (records, fields, error position or -1). With
    ``fill`` false only counts; with ``fill`` true writes, per record, its start, the start of its
    line terminator (the end of its last field; a '\\r' before '\\n' belongs to the terminator)
    and the index of its first field in ``fstart``. An unclosed quote is an error at its
    position, except that, as a backtracking regular expression does, a quoted section that
    runs to the end with a doubled quote in it closes at the last doubled quote's first one."""
    n = buf.shape[0]
    pos = 0
    records = 0
    fields = 0
    while pos < n:
        if fill:
            rec_start[records] = pos
            rec_first[records] = fields
        while True:  # the fields of one record
            if fill:
                fstart[fields] = pos
            fields += 1
            field_begin = pos
            if pos < n and buf[pos] == quote:
                i = pos + 1
                closed = -1
                last_pair = -1
                while i < n:
                    if buf[i] == quote:
                        if i + 1 < n and buf[i + 1] == quote:
                            last_pair = i
                            i += 2
                            continue
                        closed = i
                        break
                    i += 1
                if closed < 0:
                    if last_pair < 0:
                        return records, fields, field_begin
                    closed = last_pair
                pos = closed + 1
            while pos < n and buf[pos] != sep and buf[pos] != _NL:
                pos += 1
            if pos < n and buf[pos] == sep:
                pos += 1
                continue
            break
        # the record ends at '\n' (pos) or at the end of the text
        term = pos
        if pos < n:
            if pos > field_begin and buf[pos - 1] == _CR:
                term = pos - 1
            pos += 1
        if fill:
            rec_term[records] = term
        records += 1
    return records, fields, -1


@kernel
def _count_bytes(buf, sep):
    """(line breaks, separators) in ``buf``, in one pass."""
    newlines = 0
    separators = 0
    for i in range(buf.shape[0]):
        c = buf[i]
        if c == _NL:
            newlines += 1
        elif c == sep:
            separators += 1
    return newlines, separators


def scan(data: np.ndarray, sep: int, quote: int):
    """(record starts, terminator starts, first-field indexes, field starts) of the text
    ``data`` (uint8), the last array closed by the number of fields; or the position of an
    unclosed quote (an int)."""
    kind = offset_type(data.shape[0])
    # one pass into arrays of the most records and fields the text can hold (a record a line
    # break, a field a separator more), cut to what it holds
    newlines, separators = _count_bytes(data, sep)
    most_records = newlines + 1
    most_fields = separators + most_records
    rec_start = np.empty(most_records + 1, dtype=kind)
    rec_term = np.empty(most_records, dtype=kind)
    rec_first = np.empty(most_records + 1, dtype=np.int64)
    fstart = np.empty(most_fields, dtype=kind)
    records, fields, error = _scan(data, sep, quote, True, rec_start, rec_term, rec_first, fstart)
    if error >= 0:
        return int(error)
    rec_start[records] = data.shape[0]
    rec_first[records] = fields
    return rec_start[: records + 1], rec_term[:records], rec_first[: records + 1], fstart[:fields]


@kernel
def _field_spans(fstart, rec_first, rec_term, data_rows, spans):
    """Row i of ``spans``: the starts of record data_rows[i]'s fields, then its terminator + 1."""
    h = spans.shape[1] - 1
    for i in range(data_rows.shape[0]):
        r = data_rows[i]
        first = rec_first[r]
        for k in range(h):
            spans[i, k] = fstart[first + k]
        spans[i, h] = rec_term[r] + 1


def field_spans(
    fstart: np.ndarray, rec_first: np.ndarray, rec_term: np.ndarray, data_rows: np.ndarray, h: int
) -> np.ndarray:
    """(rows, h + 1) array of the data rows' field starts and terminator + 1 (see ``scan``): field
    j of row i is text[spans[i, j]:spans[i, j + 1] - 1]."""
    spans = np.empty((data_rows.shape[0], h + 1), dtype=fstart.dtype)
    _field_spans(fstart, rec_first, rec_term, data_rows, spans)
    return spans


def offset_type(size: int):
    """int32 offsets for a text under 2 GiB (half the memory of int64), else int64."""
    return np.int32 if size < 2**31 - 2 else np.int64


@kernel
def _text_flags(buf, starts, ends, quote):
    """Per column of fields: (widest, any starts with a quote, any non-ASCII byte, any digit,
    any empty, every byte one of 0-9 . + - e E and comma, any number with a leading zero
    ('0' then a digit after an optional sign), any of . e E, any comma, every non-blank field an
    integer (ASCII whitespace, an optional sign and digits))."""
    widest = 0
    quoted = False
    wide_char = False
    digit = False
    empty = False
    plain = True
    leading_zero = False
    fraction = False
    comma = False
    integers = True
    for i in range(starts.shape[0]):
        s = starts[i]
        e = ends[i]
        if e - s > widest:
            widest = e - s
        if e == s:
            empty = True
            continue
        a = s
        b = e
        while a < b and (buf[a] == 32 or 9 <= buf[a] <= 13 or 28 <= buf[a] <= 31):
            a += 1
        while b > a and (buf[b - 1] == 32 or 9 <= buf[b - 1] <= 13 or 28 <= buf[b - 1] <= 31):
            b -= 1
        if a < b:
            if buf[a] == 43 or buf[a] == 45:
                a += 1
            if a == b:
                integers = False
            for j in range(a, b):
                if not 48 <= buf[j] <= 57:
                    integers = False
                    break
        if buf[s] == quote:
            quoted = True
        k = s
        if buf[k] == 43 or buf[k] == 45:  # + -
            k += 1
        if k + 1 < e and buf[k] == 48 and 48 <= buf[k + 1] <= 57:
            leading_zero = True
        for j in range(s, e):
            c = buf[j]
            if c >= 128:
                wide_char = True
            if 48 <= c <= 57:
                digit = True
            elif c == 46 or c == 101 or c == 69:  # . e E
                fraction = True
            elif c == 44:
                comma = True
            elif c != 43 and c != 45:
                plain = False
    return widest, quoted, wide_char, digit, empty, plain, leading_zero, fraction, comma, integers


def text_flags(data, starts, ends, quote: int) -> dict:
    """What a column's fields hold (see ``_text_flags``), by name."""
    names = (
        "widest",
        "quoted",
        "wide_char",
        "digit",
        "empty",
        "plain",
        "leading_zero",
        "fraction",
        "comma",
        "integers",
    )
    return dict(zip(names, _text_flags(data, starts, ends, quote), strict=True))


@kernel(inline="always")
def _put(out, pos, src, a, b, fill):
    """Copy src[a:b] to out at ``pos`` (when filling); the position after it. (A loop: the
    copies are a few bytes each, shorter than a slice's set-up.)"""
    if fill:
        for k in range(b - a):
            out[pos + k] = src[a + k]
    return pos + b - a


@kernel
def _assemble(
    buf, head, spans, order, tails, qcol, codes, tbuf, toff, wrap, in_sep, out_sep, quote, fill, out
):
    """The output's bytes: ``head``, then for each data row i the fields of record order[i]
    joined by ``out_sep`` (a replaced column's cell is text ``codes[c, i]`` of ``tbuf``, in
    quotes when ``wrap`` says so or the input's cell started with a quote) and the bytes of
    ``tails[i]`` (row i's line terminator and the blank lines after it, which stay in place). A
    field holding ``out_sep`` (when it is not ``in_sep``) is quoted, as ``io.csv.csv_bytes`` does.
    Returns the size; with ``fill`` writes ``out``."""
    pos = _put(out, 0, head, 0, head.shape[0], fill)
    rows = min(order.shape[0], tails.shape[0])
    columns = spans.shape[1] - 1
    same_sep = out_sep == in_sep
    for i in range(rows):
        r = order[i]
        cursor = spans[r, 0]  # the input's bytes from here are copied as they are (same separator)
        for j in range(columns):
            s = spans[r, j]
            e = spans[r, j + 1] - 1
            c = qcol[j]
            if c >= 0:
                if same_sep:
                    pos = _put(out, pos, buf, cursor, s, fill)
                    cursor = e
                elif j > 0:
                    if fill:
                        out[pos] = out_sep
                    pos += 1
                code = codes[c, i]
                quoted = wrap[code] != 0 or (e > s and buf[s] == quote)
                if quoted:
                    if fill:
                        out[pos] = quote
                    pos += 1
                pos = _put(out, pos, tbuf, toff[code], toff[code + 1], fill)
                if quoted:
                    if fill:
                        out[pos] = quote
                    pos += 1
                continue
            if same_sep:
                continue
            if j > 0:
                if fill:
                    out[pos] = out_sep
                pos += 1
            needs_quotes = False
            if e == s or buf[s] != quote:
                for t in range(s, e):
                    if buf[t] == out_sep:
                        needs_quotes = True
                        break
            if needs_quotes:
                if fill:
                    out[pos] = quote
                pos += 1
                for t in range(s, e):
                    if buf[t] == quote:
                        if fill:
                            out[pos] = quote
                        pos += 1
                    if fill:
                        out[pos] = buf[t]
                    pos += 1
                if fill:
                    out[pos] = quote
                pos += 1
            else:
                pos = _put(out, pos, buf, s, e, fill)
        if same_sep:
            pos = _put(out, pos, buf, cursor, spans[r, columns] - 1, fill)
        pos = _put(out, pos, buf, tails[i, 0], tails[i, 1], fill)
    return pos


def assemble(
    data, head, spans, order, tails, qcol, codes, tbuf, toff, wrap, in_sep, out_sep, quote
):
    """The output file's bytes (uint8 array); see ``_assemble``."""
    args = (data, head, spans, order, tails, qcol, codes, tbuf, toff, wrap, in_sep, out_sep, quote)
    if in_sep == out_sep:  # at most the input and the published texts with their quotes: one pass
        lengths = np.diff(toff)
        size = (
            head.shape[0]
            + data.shape[0]
            + sum(int(lengths[row].sum(dtype=np.int64)) for row in codes)
        )
        size += 2 * codes.size
    else:
        size = _assemble(*args, False, np.empty(0, dtype=np.uint8))
    out = np.empty(size, dtype=np.uint8)
    return out[: _assemble(*args, True, out)]


@kernel
def _gather(buf, starts, ends, out, offsets):
    """The fields one after another in ``out``; field i is out[offsets[i]:offsets[i + 1]]."""
    pos = 0
    offsets[0] = 0
    for i in range(starts.shape[0]):
        for t in range(starts[i], ends[i]):
            out[pos] = buf[t]
            pos += 1
        offsets[i + 1] = pos


def texts_in_rows(texts: np.ndarray, offsets: np.ndarray, codes: list):
    """(bytes, offsets) of the texts ``codes[0]``, then ``codes[1]``, ... one after another (text c
    of ``texts`` is texts[offsets[c]:offsets[c + 1]]): columns of texts laid out in row order,
    one column at a time, in one buffer."""
    lengths = np.diff(offsets)
    size = sum(int(lengths[c].sum(dtype=np.int64)) for c in codes)
    out = np.empty(max(size, 1), dtype=np.uint8)
    out_offsets = np.zeros(sum(len(c) for c in codes) + 1, dtype=np.int64)
    row, pos = 0, 0
    for c in codes:
        part = out_offsets[row : row + len(c) + 1]
        _gather(texts, offsets[c], offsets[c + 1], out[pos:], part)
        part += pos
        row, pos = row + len(c), int(part[-1])
    return out, out_offsets


def strings(data: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """The fields (valid UTF-8) as a pyarrow string array, without a Python object per field."""
    import pyarrow as pa

    total = int((ends - starts).sum(dtype=np.int64))
    large = total >= 2**31 - 1
    out = np.empty(max(total, 1), dtype=np.uint8)
    offsets = np.empty(starts.shape[0] + 1, dtype=np.int64 if large else np.int32)
    _gather(data, starts, ends, out, offsets)
    kind = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(
        kind, starts.shape[0], [None, pa.py_buffer(offsets), pa.py_buffer(out)]
    )


@kernel
def _parse_integers(buf, starts, ends, out, plain):
    """Each field an optional sign and digits, within int64: parsed into ``out`` (True), else
    False. ``plain``: also False at a leading zero ('0' then a digit after the sign), a code
    such as 00123 that the column rules keep as text."""
    limit = np.uint64(9223372036854775807)
    for i in range(starts.shape[0]):
        k = starts[i]
        e = ends[i]
        negative = False
        if k < e and (buf[k] == 43 or buf[k] == 45):
            negative = buf[k] == 45
            k += 1
        if k == e:
            return False
        if plain and k + 1 < e and buf[k] == 48:
            return False
        value = np.uint64(0)
        while k < e:
            c = buf[k]
            if c < 48 or c > 57:
                return False
            digit = np.uint64(c - 48)
            if value > (limit + np.uint64(1) - digit) // np.uint64(10):
                return False
            value = value * np.uint64(10) + digit
            k += 1
        if negative:
            if value > limit + np.uint64(1):
                return False
            out[i] = -np.int64(value - np.uint64(1)) - 1 if value > np.uint64(0) else 0
        else:
            if value > limit:
                return False
            out[i] = np.int64(value)
    return True


def integers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, plain: bool = False):
    """The fields as int64 (each an optional sign and digits, as Python's int reads them), or
    None when one is not or does not fit; ``plain``: None also when one has a leading zero (so
    that a column of plain integers is found and parsed in one pass)."""
    out = np.empty(starts.shape[0], dtype=np.int64)
    return out if _parse_integers(data, starts, ends, out, plain) else None


@kernel
def _hash_fields(buf, starts, ends, out):
    """FNV-1a (64 bits) of each field's bytes."""
    for i in range(starts.shape[0]):
        h = np.uint64(14695981039346656037)
        for t in range(starts[i], ends[i]):
            h = (h ^ np.uint64(buf[t])) * np.uint64(1099511628211)
        out[i] = np.int64(h)


@kernel
def _first_rows(codes, count):
    """The first row of each code (codes number the values in order of first appearance)."""
    first = np.full(count, -1, dtype=np.int64)
    for i in range(codes.shape[0]):
        if first[codes[i]] < 0:
            first[codes[i]] = i
    return first


@kernel
def _all_equal_to_first(buf, starts, ends, codes, first_data, first_offsets):
    """Every field has the very bytes of the first field of its code (no two texts share a hash);
    the first fields are given one after another (``first_data``, compact: looked up at random)."""
    for i in range(codes.shape[0]):
        c = codes[i]
        a = first_offsets[c]
        w = ends[i] - starts[i]
        if first_offsets[c + 1] - a != w:
            return False
        for t in range(w):
            if buf[starts[i] + t] != first_data[a + t]:
                return False
    return True


def fields_are(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, codes, texts, offsets):
    """Every field [starts[i], ends[i]) of ``data`` has the very bytes of text ``codes[i]``
    (text c is texts[offsets[c]:offsets[c + 1]]): a written column checked against what was
    written, in one pass and no string per field."""
    return bool(_all_equal_to_first(data, starts, ends, codes, texts, offsets))


def group_codes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """(codes, first rows): equal fields (byte for byte) share a code, numbered in order of first
    appearance, found by hashing the bytes (no string per field); or None when two different
    fields share a hash (then the caller groups the texts otherwise)."""
    import pandas as pd

    hashes = np.empty(starts.shape[0], dtype=np.int64)
    _hash_fields(data, starts, ends, hashes)
    codes, distinct = pd.factorize(hashes)
    codes = codes.astype(np.int64)
    first = _first_rows(codes, len(distinct))
    first_data = np.empty(
        max(int((ends[first] - starts[first]).sum(dtype=np.int64)), 1), dtype=np.uint8
    )
    first_offsets = np.empty(len(first) + 1, dtype=np.int64)
    _gather(data, starts[first], ends[first], first_data, first_offsets)
    if not _all_equal_to_first(data, starts, ends, codes, first_data, first_offsets):
        return None
    return codes, first
