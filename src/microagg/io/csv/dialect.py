"""A delimited text file's dialect: its encoding (BOM included), separator and decimal mark
found from its bytes, its records split into raw fields, and its header read from its first bytes
only. ``reader`` and the out-of-core mode (``sniff_csv``) detect a file's dialect the same way."""

from __future__ import annotations

import re
from pathlib import Path

from ... import read_limits
from ...errors import FormatWarning, InputError, option_term

SEPARATORS = (",", ";", "\t", "|")

NUMBER = {
    ".": re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*"),
    ",": re.compile(r"\s*[+-]?(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?\s*"),
}
#: a number under the decimal comma whose points separate thousands (95.250, 1.234.567,5): the
#: points are dropped (a point between groups of three digits is never a decimal point there)
GROUPED = {",": re.compile(r"\s*[+-]?[1-9]\d{0,2}(?:\.\d{3})+(?:,\d*)?(?:[eE][+-]?\d+)?\s*")}
INTEGER = re.compile(r"\s*[+-]?\d+\s*")
LEADING_ZERO = re.compile(r"\s*[+-]?0\d")


def decode(raw: bytes, encoding: str | None, name: str):
    """(text, encoding, bom): UTF-8 (with or without BOM), UTF-16 by BOM, else cp1252 / latin-1."""
    if encoding is not None:
        encoding = _byte_order(raw, encoding)
        bom = encoding.lower().replace("_", "-") in ("utf-8-sig",)
        try:
            text = raw.decode(encoding)
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{name} is not valid {encoding} (byte {exc.start}); "
                "give the right one with --encoding"
            ) from None
        if bom:
            return text, "utf-8", True
        if text.startswith("\ufeff") and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
            return text[1:], "utf-8", True
        if text.startswith("\ufeff") and _WIDE.fullmatch(encoding.lower().replace("_", "-")):
            return text[1:], encoding, True  # written back with its byte order mark
        return text, encoding, False
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8"), "utf-8", True
    if raw.startswith(
        (b"\xff\xfe", b"\xfe\xff")
    ):  # UTF-16 by its BOM, written back in the same byte order
        enc = "utf-16-le" if raw.startswith(b"\xff\xfe") else "utf-16-be"
        try:
            return raw[2:].decode(enc), enc, True
        except UnicodeDecodeError as exc:
            raise InputError(f"{name} is not valid {enc} (byte {exc.start + 2})") from None
    for enc in ("utf-8", "cp1252", "latin-1"):  # latin-1 decodes any byte: the last resort
        try:
            return raw.decode(enc), enc, False
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")


#: a UTF-16 or UTF-32 codec of a given byte order
_WIDE = re.compile(r"utf-?(16|32)-?(le|be)")
_MARKS = {
    "16": ((b"\xff\xfe", "le"), (b"\xfe\xff", "be")),
    "32": ((b"\xff\xfe\x00\x00", "le"), (b"\x00\x00\xfe\xff", "be")),
}


def _byte_order(raw: bytes, encoding: str) -> str:
    """A UTF-16 / UTF-32 encoding given without its byte order ('utf-16'), as the codec of the
    order the file's byte order mark says (its mark kept in the text, to be written back), or,
    without one, the order Python's codec reads it in: so that a file without a mark is written
    back without one."""
    import sys

    found = re.fullmatch(r"utf-?(16|32)", encoding.lower().replace("_", "-"))
    if found is None:
        return encoding
    bits = found.group(1)
    for mark, order in _MARKS[bits]:
        if raw.startswith(mark):
            return f"utf-{bits}-{order}"
    return f"utf-{bits}-{'le' if sys.byteorder == 'little' else 'be'}"


def _field_pattern(sep: str, quote: str):
    s, q = re.escape(sep), re.escape(quote)
    # a field: a quoted section ("" inside is one quote), then any text up to the separator; or,
    # when it does not start with a quote, text in which a quote is a plain character (RFC 4180,
    # as Python's csv and pandas read it: 12" is twelve inches, not the start of a quoted field)
    # (nothing at an unclosed quote: the caller reports it). The quoted section is the unrolled
    # loop "[^"]*(?:""[^"]*)*": the same language as "(?:[^"]|"")*", whose one repetition per
    # character kept a backtracking mark per character (a 10 MB quoted field took 1.4 GB)
    return re.compile(rf"{q}[^{q}]*(?:{q}{q}[^{q}]*)*{q}[^{s}\n]*|(?!{q})[^{s}\n]*|")


def split_records(text: str, sep: str, quote: str = '"', lenient: bool = False):
    """Raw fields and terminator of every record. Quoted fields may hold separators and line breaks.
    ``lenient``: stop at an unclosed quote instead of failing (sniffing a cut-off head)."""
    field_re = _field_pattern(sep, quote)
    records, ends = [], []
    pos, n = 0, len(text)
    while pos < n:
        nl = text.find("\n", pos)
        stop = n if nl < 0 else nl
        line = text[pos:stop]
        if quote not in line:  # the common case: split the line
            fields = line.split(sep)
            pos = stop + 1 if nl >= 0 else n
            end = "\n" if nl >= 0 else ""
        else:
            fields = []
            while True:
                m = field_re.match(text, pos)
                fields.append(m.group())
                pos = m.end()
                if pos < n and text[pos] == sep:
                    pos += 1
                    continue
                break
            if pos < n and text[pos] == "\n":
                pos, end = pos + 1, "\n"
            elif pos >= n:
                end = ""
            elif lenient:
                break
            else:
                line_no = text.count("\n", 0, pos) + 1
                raise InputError(f"unclosed quote near line {line_no}")
        if end and fields[-1].endswith("\r"):
            fields[-1], end = fields[-1][:-1], "\r\n"
        records.append(fields)
        ends.append(end)
    return records, ends


def unquote(raw: str, quote: str = '"') -> str:
    """A field's value: a quoted section loses its quotes ("" is one quote) and keeps the text
    after it; a field that does not start with a quote is its text."""
    if not raw.startswith(quote):
        return raw
    i, n = 1, len(raw)
    while i < n:  # the closing quote: the first one not doubled
        if raw[i] == quote:
            if i + 1 < n and raw[i + 1] == quote:
                i += 2
                continue
            return raw[1:i].replace(quote * 2, quote) + raw[i + 1 :]
        i += 1
    return raw[1:].replace(quote * 2, quote)  # unclosed (only in a cut-off head)


def sniff_sep(text: str, quote: str = '"') -> str:
    """The separator among , ; tab | that splits the first lines into the same number (> 1) of
    fields."""
    head = text[:65536]
    cut = head.rfind("\n")
    head = head if cut < 0 or len(text) <= 65536 else head[:cut]
    best, best_fields = ",", 1
    for sep in SEPARATORS:
        records, _ = split_records(head, sep, quote, lenient=True)
        counts = {len(r) for r in records if r != [""]}
        if len(counts) == 1:
            fields = counts.pop()
            if fields > best_fields:
                best, best_fields = sep, fields
    return best


def sniff_decimal(columns: list, sep: str) -> str:
    """',' when the separator is not ',' and numbers in the file use a decimal comma, not a
    point (a point between groups of three digits, 95.250, says neither)."""
    if sep == ",":
        return "."
    comma = point = 0
    for values in columns:
        for v in values[:200]:
            if "," in v and NUMBER[","].fullmatch(v):
                comma += 1
            elif "." in v and NUMBER["."].fullmatch(v) and not GROUPED[","].fullmatch(v):
                point += 1  # (95.250 may be thousands under a decimal comma: no evidence)
    return "," if comma > 0 and point == 0 else "."


def warn_thousands(columns: list, decimal: str, name: str) -> None:
    """A detected decimal comma may be a thousands separator when every number with a comma has
    exactly three digits after it (12,500): say so, the values would be off by a factor 1000."""
    if decimal != ",":
        return
    seen = [
        v.strip()
        for values in columns
        for v in values[:200]
        if "," in v and NUMBER[","].fullmatch(v)
    ]
    if seen and all(_THOUSANDS.fullmatch(v) for v in seen):
        import warnings

        warnings.warn(
            f"every number with a comma in {name} has three digits after it (such as {seen[0]!r}): "
            "the comma is read as the decimal mark; if it separates thousands, give"
            f" {option_term('decimal', value='.')} "
            "(such columns are then not numbers and not protected)",
            FormatWarning,
            stacklevel=3,
        )


_THOUSANDS = re.compile(r"[+-]?\d{1,3},\d{3}")


def text_of(raw: bytes, encoding: str | None, name: str) -> tuple[bytes, str, bool]:
    """(the file's text as UTF-8 bytes without its BOM, its encoding, whether it had a BOM). An
    ASCII file is its own text; a UTF-8 one is checked, not copied; others are transcoded."""
    if encoding is None and raw.isascii():
        return raw, "utf-8", False
    text, enc, bom = decode(raw, encoding, name)
    if encoding is None and enc == "utf-8":
        return (raw[3:] if bom else raw), enc, bom
    return text.encode("utf-8", "surrogatepass"), enc, bom


def head_text(buf: bytes) -> str:
    """The first 65,537 characters of the text at most (what the sniffers look at: more than
    65,536 says the text goes on)."""
    head = buf[: 65537 * 4]
    for cut in range(4):  # not inside a UTF-8 character
        try:
            return head[: len(head) - cut].decode("utf-8")[:65537]
        except UnicodeDecodeError:
            continue
    return head.decode("utf-8", "replace")[:65537]


def line_of(buf: bytes, pos: int) -> int:
    return buf.count(b"\n", 0, pos) + 1


def given_sep(sep: str | None) -> str | None:
    """The separator given (--sep; 'tab' or '\\t' for a tab), checked: one ASCII character, not a
    quote or a line break."""
    if sep is None:
        return None
    sep = {"tab": "\t", "\\t": "\t"}.get(sep, sep)
    if len(sep) != 1 or sep in '"\n\r':
        raise InputError(f"--sep must be one character (or 'tab'), got {sep!r}")
    if not sep.isascii():
        raise InputError(f"--sep must be an ASCII character, got {sep!r}")
    return sep


def given_decimal(decimal: str | None) -> str | None:
    """The decimal mark given (--decimal), checked."""
    if decimal is not None and decimal not in (".", ","):
        raise InputError(f"--decimal must be '.' or ',', got {decimal!r}")
    return decimal


def header(p: Path, *, sep=None, decimal=None, encoding=None) -> list:
    """The column names (the first record's fields, unquoted) as ``read`` finds them, from the
    file's first bytes only: as many as hold the separator sniffing's 64 KiB and the whole first
    record (gzip inflated as far as that)."""
    import gzip

    given_decimal(decimal)
    sep = given_sep(sep)
    with open(p, "rb") as f:
        zipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if zipped else open
    size = 1 << 18  # 4 bytes for each of the 65,537 characters the sniffer sees at most
    with opener(p, "rb") as stream:
        raw = stream.read(size)
        while True:
            read_limits.check_text(raw, p.name, encoding)
            more = stream.read(size)
            text, _ = _decoded_head(raw, encoding, p.name, complete=not more)
            if not more or _first_record_complete(text, sep):
                break
            raw += more
            size *= 2
    if not text.strip():
        raise InputError(f"input file is empty: {p}")
    if "\r" in text and "\n" not in text:
        text = text.replace("\r", "\n")
    if sep is None:
        sep = sniff_sep(text[:65537])
    records, _ = split_records(text, sep, lenient=True)
    return [unquote(f) for f in records[0]]


def _decoded_head(raw: bytes, encoding, name: str, complete: bool):
    """(the text of a file's first bytes by ``decode``, a character cut at their end dropped,
    None)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or (encoding or "").lower().replace(
        "_", "-"
    ).startswith("utf-16"):
        raw = raw[: len(raw) // 2 * 2]
    elif not complete:
        for cut in range(4):
            try:
                raw[: len(raw) - cut].decode(encoding or "utf-8")
            except (UnicodeDecodeError, LookupError):
                continue
            raw = raw[: len(raw) - cut]
            break
    return decode(raw, encoding, name)[0], None


def _first_record_complete(text: str, sep) -> bool:
    """The first record ends (a line break outside quotes) within ``text``, with more after it."""
    lines = text.replace("\r", "\n")
    for candidate in [sep] if sep else list(SEPARATORS):
        records, _ = split_records(lines[: 65537 * 4], candidate, lenient=True)
        if len(records) < 2:
            return False
    return len(text) > 65536


def sniff_csv(path) -> tuple[str, str]:
    """(separator, encoding) of a (possibly gzipped) CSV file, detected from its first 64 KiB as
    ``read`` detects them (for readers that stream the file in chunks; a UTF-8 BOM is 'utf-8-sig',
    UTF-16 by its BOM 'utf-16')."""
    import gzip

    with open(path, "rb") as f:
        head = f.read(65536)
    if head[:2] == b"\x1f\x8b":
        with gzip.open(path, "rb") as f:
            head = f.read(65536)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        head = head[: len(head) // 2 * 2]  # not cut inside a UTF-16 code unit
    elif len(head) == 65536:  # not cut inside a UTF-8 character (its last 1 to 3 bytes)
        for cut in range(4):
            try:
                head[: len(head) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            head = head[: len(head) - cut]
            break
    text, encoding, bom = decode(head, None, Path(path).name)
    if bom:
        encoding = "utf-8-sig" if encoding == "utf-8" else "utf-16"
    return sniff_sep(text), encoding
