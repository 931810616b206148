"""The column rules of survey files: household and person ids, and sampling weights, told by the
names survey programmes give them (EU-SILC, IPUMS, labour-force surveys in several languages) and
by their data (a household id groups consecutive records and carries household-level variables;
a person id is a unique sequential number; a household weight is positive, mostly fractional and
constant within each household). ``column_rules`` applies them: none of these columns is ever a
default quasi-identifier, so none is averaged.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = [
    "SURVEY_ID_NAMES",
    "SURVEY_WEIGHT_NAMES",
    "SURVEY_CODE_NAMES",
    "survey_code_name",
    "HOUSEHOLD_WORDS",
    "WEIGHT_WORDS",
    "MAX_HOUSEHOLD_SIZE",
    "survey_id_name",
    "survey_weight_name",
    "household_by_data",
    "person_id_by_data",
    "weight_by_data",
    "frame_roles",
]

#: Ids by the names survey programmes give them: EU-SILC's household ids (DB030, HB030, RB040,
#: PX030, RX030) and person ids (RB030, PB030); IPUMS's household serial numbers (SERIAL,
#: CBSERIAL, SERIALNO) and person number (PERNUM); NHANES's SEQN; a case id.
SURVEY_ID_NAMES = {
    "db030": "EU-SILC's household id",
    "hb030": "EU-SILC's household id",
    "rb040": "EU-SILC's household id",
    "px030": "EU-SILC's household id",
    "rx030": "EU-SILC's household id",
    "rb030": "EU-SILC's person id",
    "pb030": "EU-SILC's person id",
    "serial": "IPUMS's household id (SERIAL)",
    "cbserial": "IPUMS's household id (CBSERIAL)",
    "serialno": "a household id (serial number)",
    "pernum": "IPUMS's person number within the household",
    "seqn": "a respondent sequence number",
    "caseid": "a case id",
}

#: Weights by the names survey programmes give them: EU-SILC's household weight (DB090, DB095)
#: and personal weights (RB050, RB050a, RB060-RB064, PB040, PB050, PB060, PB080, RL070).
SURVEY_WEIGHT_NAMES = {
    "db090": "EU-SILC's household weight",
    "db095": "EU-SILC's household weight",
    "rb050": "EU-SILC's personal weight",
    "rb050a": "EU-SILC's personal weight",
    "rb060": "EU-SILC's personal weight",
    "rb062": "EU-SILC's personal weight",
    "rb063": "EU-SILC's personal weight",
    "rb064": "EU-SILC's personal weight",
    "pb040": "EU-SILC's personal weight",
    "pb050": "EU-SILC's personal weight",
    "pb060": "EU-SILC's personal weight",
    "pb080": "EU-SILC's personal weight",
    "rl070": "EU-SILC's personal weight",
}

#: Category codes by the names survey programmes give them, whatever their number of values:
#: EU-SILC's region (DB040), degree of urbanisation (DB100), occupation (PL050, PL051: ISCO),
#: industry (PL110, PL111: NACE), citizenship and country of birth (PB210, PB220A), education
#: (PE040), economic status (PL030, PL031), marital status (PB190), sex (RB090, PB150),
#: activity (RB210), dwelling type and tenure (HH010, HH020); IPUMS's geography (STATEFIP,
#: COUNTYFIP, PUMA, METAREA), occupation and industry (OCC, IND, OCC1990, IND1990).
SURVEY_CODE_NAMES = (
    "db040",
    "db100",
    "pl050",
    "pl051",
    "pl051a",
    "pl110",
    "pl111",
    "pl111a",
    "pb210",
    "pb220a",
    "pe040",
    "pl030",
    "pl031",
    "pb190",
    "rb090",
    "pb150",
    "rb210",
    "hh010",
    "hh020",
    "statefip",
    "countyfip",
    "puma",
    "metarea",
    "occ",
    "ind",
    "occ1990",
    "ind1990",
    "occ2010",
    "ind1950",
)


def survey_code_name(name) -> str | None:
    """Why column ``name`` holds category codes by a survey programme's naming (None if it does
    not): EU-SILC's pl051 (ISCO), pl111 (NACE), db040 (region), ...; IPUMS's STATEFIP, PUMA,
    OCC, IND."""
    if isinstance(name, str) and name.strip().lower() in SURVEY_CODE_NAMES:
        return (
            f"its name ({name.strip()!r}, a survey programme's code variable) says category codes"
        )
    return None


#: Words for a household (or dwelling, family) in the languages of labour-force surveys: a column
#: named by one alone (hogar, menage, haushalt) or with an id affix (id_hogar, hhnr, idmen,
#: numhog) numbers households. The short forms count only with an affix.
HOUSEHOLD_WORDS = (
    "household",
    "hogar",
    "menage",
    "ménage",
    "haushalt",
    "famiglia",
    "familia",
    "famille",
    "vivienda",
    "logement",
    "wohnung",
    "domicilio",
)
_SHORT_HOUSEHOLD = ("hh", "hog", "men", "fam", "viv", "hhld", "hshld", "haus")
_ID_AFFIX = r"(?:id|ident|nr|num|no|n|key|serial|code|cod)"
_HOUSEHOLD_NAME = re.compile(
    rf"(?:{_ID_AFFIX}_?)?(?:{'|'.join(HOUSEHOLD_WORDS)})(?:_?{_ID_AFFIX})?"
    rf"|{_ID_AFFIX}_?(?:{'|'.join(_SHORT_HOUSEHOLD)})|(?:{'|'.join(_SHORT_HOUSEHOLD)})_?{_ID_AFFIX}",
    re.IGNORECASE,
)

#: A name ending in a household id's abbreviation: hid, hhid, hh_id, ori_hid, HHNR
_HOUSEHOLD_ID = re.compile(r"(?:^|[_\W])(?:hh?_?id|hh_?(?:nr|no|num))$", re.IGNORECASE)

#: Word stems that name a sampling weight in the languages of labour-force surveys: weight,
#: Gewicht / Hochrechnungsfaktor, poids / pondération, peso / factor (de elevación),
#: fattore / coefficiente di riporto, ponderación.
WEIGHT_WORDS = ("weight", "gewicht", "hochrechn", "poids", "ponder", "pondér", "peso", "factor")
_WEIGHT_WORD = re.compile(
    "|".join(WEIGHT_WORDS) + r"(?!y)|fattor|(?:^|[_\W])coef", re.IGNORECASE
)  # not a factory; coef(f) as a word's start
#: IPUMS-style abbreviations, one word of the name: HHWT, PERWT, WTFINL, ASECWT, EARNWT, REPWTP,
#: wgt, pwgtp, wght, fwt
_WEIGHT_ABBREVIATION = re.compile(
    r"(?:hh|per|p|h|f|w|asec|earn|rep|lnk|hw|pw)?(?:wt|wgt|wght)(?:finl|supp|p|s|\d+)*"
    r"|wt(?:finl|supp)\w*",
    re.IGNORECASE,
)


def _words(name: str) -> list[str]:
    """The words of a name: split at non-letters and at lower-to-upper case changes."""
    return [w for w in re.split(r"[^A-Za-zÀ-ÿ0-9]+|(?<=[a-z])(?=[A-Z])", name) if w]


def survey_id_name(name) -> str | None:
    """Why column ``name`` is an id by a survey programme's naming (None if it is not): EU-SILC's
    db030 / rb030 ..., IPUMS's SERIAL / PERNUM, or a household word with or without an id affix
    (hogar, id_hogar, menage, haushalt, hhnr, idmen)."""
    if not isinstance(name, str):
        return None
    text = name.strip().lower()
    if text in SURVEY_ID_NAMES:
        return f"its name says identifier ({SURVEY_ID_NAMES[text]})"
    if _HOUSEHOLD_NAME.fullmatch(text) or _HOUSEHOLD_ID.search(text):
        return "its name says identifier (a household id)"
    return None


def survey_weight_name(name) -> str | None:
    """Why column ``name`` is a sampling weight by its name (None if it is not): EU-SILC's db090 /
    rb050 ..., a weight word in one of several languages (weight, gewicht, poids, peso, factor,
    ponderación, fattore), or an IPUMS-style abbreviation (HHWT, PERWT, WTFINL, wgt)."""
    if not isinstance(name, str):
        return None
    text = name.strip().lower()
    if text in SURVEY_WEIGHT_NAMES:
        return f"its name says survey weight ({SURVEY_WEIGHT_NAMES[text]})"
    if _WEIGHT_WORD.search(text) or any(_WEIGHT_ABBREVIATION.fullmatch(w) for w in _words(name)):
        return "its name says survey weight"
    return None


#: A household holds at most this many persons on average for a column to be read as a household
#: id from its data (EU-SILC: 2.5; the largest national averages are below 8)
MAX_HOUSEHOLD_SIZE = 8
#: ... and at least this many households
MIN_HOUSEHOLDS = 10
#: ... of which at least this many of two records or more (a column constant within fewer could
#: be so by chance)
MIN_SHARED = 5


def _integers(col, floats: bool = False) -> np.ndarray | None:
    """The column's values as int64 when it is stored as integers (or as floats that are all long
    digit strings: an id a Stata file keeps as a double; ``floats``: or any integer-valued floats,
    for the rules whose other evidence is strong) and none is missing."""
    if not isinstance(col, pd.Series) or not pd.api.types.is_numeric_dtype(col.dtype):
        return None
    if (
        not floats
        and isinstance(col.dtype, np.dtype)
        and col.dtype.kind == "f"
        and not (len(col) and col.min() >= 10**6)
    ):
        return None  # amounts, told before the missing values are looked for (wide files)
    if isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
        values = col.to_numpy()
        if len(values) and not np.all(values == np.round(values)):
            return None  # a fraction or a missing value, told by numpy (wide files)
    if pd.api.types.is_bool_dtype(col.dtype) or col.isna().any():
        return None
    integer = pd.api.types.is_integer_dtype(col.dtype)
    if not (floats or integer or (len(col) and col.min() >= 10**6)):
        return None  # floats, not long digit strings: amounts (decided before any conversion)
    x = col.to_numpy(dtype=np.float64)
    if not len(x) or not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
        return None
    if np.abs(x).max() > 2**53:
        return None
    x = x.astype(np.int64)
    if not (floats or integer or _long_digits(x)):
        return None  # integer-valued floats are amounts computed, not numbers given
    return x


def _long_digits(x: np.ndarray) -> bool:
    """Every value a positive integer of the same number of digits, at least 7: an id written
    as a long digit string (a household number 2019000123, a person number 1234567)."""
    if not len(x) or x.min() < 10**6:
        return False
    widths = np.floor(np.log10(x.astype(np.float64))).astype(np.int64)
    return bool(widths.min() == widths.max())


def _distinct(x: np.ndarray) -> tuple[int, bool, bool]:
    """(number of distinct values, ascending through the file, dense: the distinct values fill
    at most twice their number of consecutive integers) of integers, without hashing the column
    when it is ascending or its range is small (a count of the values present)."""
    ascending = bool(np.all(x[1:] >= x[:-1]))
    span = int(x.max()) - int(x.min()) + 1
    if ascending:
        distinct = 1 + int(np.count_nonzero(x[1:] != x[:-1]))
    elif span <= 2 * len(x):
        distinct = int(np.count_nonzero(np.bincount(x - x.min())))
    else:  # a wide range: only long digit strings can be ids; they are counted by hash
        distinct = len(pd.unique(x)) if _long_digits(x) else len(x) + 1
    return distinct, ascending, span <= 2 * distinct


def person_id_by_data(name, col) -> str | None:
    """Why column ``name`` is a record id by its data (None if it is not): at least 10 distinct
    integers, one per record, numbered (ascending through the file, dense, or long digit
    strings), as EU-SILC's rb030 (household id · 100 + person number)."""
    if len(col) < MIN_HOUSEHOLDS:
        return None
    x = _integers(col)
    if x is None:
        return None
    distinct, ascending, dense = _distinct(x)
    if distinct != len(x) or not (ascending or dense or _long_digits(x)):
        return None
    return "its values are distinct integers numbering the records (a record id)"


class _Grouping:
    """Records grouped by a column's values, read in an order that puts each group's records next
    to each other (the file's own order when they already are: no sort), so that a column is
    constant within every group when each record equals the one before it in its group."""

    def __init__(self, key):
        codes, uniques = pd.factorize(key)
        self.codes, self.groups = codes, len(uniques)
        runs = 1 + int(np.count_nonzero(codes[1:] != codes[:-1])) if len(codes) else 0
        self.order = None if runs == self.groups else np.argsort(codes, kind="stable")
        ordered = codes if self.order is None else codes[self.order]
        self.same = ordered[1:] == ordered[:-1]  # record i+1 in the group of record i

    def constant_within(self, col) -> bool:
        """Whether ``col`` takes one value in each group (missing counts as a value) and more than
        one across groups: a household-level variable of this grouping."""
        v = col.to_numpy() if isinstance(col, pd.Series) else np.asarray(col)
        if self.order is not None:
            v = v[self.order]
        missing = pd.isna(v)
        with np.errstate(invalid="ignore"):
            equal = (v[1:] == v[:-1]) | (missing[1:] & missing[:-1])
        equal = np.asarray(equal, dtype=bool)
        return bool(np.all(equal[self.same])) and not bool(np.all(equal))


def household_by_data(df: pd.DataFrame, name, found: dict | None = None) -> str | None:
    """Why column ``name`` is a household id by its data (None if it is not): integers, none
    missing, shared by consecutive groups of records (at least MIN_HOUSEHOLDS groups of at most
    MAX_HOUSEHOLD_SIZE records on average), numbered (ascending, dense or long digit strings),
    and grouping records that share another column's value (a household-level variable: a
    household income, the dwelling, the household weight). ``found``: a dict that receives the
    households (name -> their grouping) for the weights rule."""
    col = df[name]
    x = _integers(col, floats=True)
    if x is None:
        return None
    groups, ascending, dense = _distinct(x)
    if groups < MIN_HOUSEHOLDS or groups >= len(x) or len(x) > MAX_HOUSEHOLD_SIZE * groups:
        return None
    consecutive = 1 + int(np.count_nonzero(x[1:] != x[:-1])) == groups
    if not (consecutive or dense) or not (ascending or dense or _long_digits(x)):
        return None
    homes = _Grouping(x)
    if np.count_nonzero(np.bincount(homes.codes) >= 2) < MIN_SHARED:
        return None  # too few households of two or more to show a household-level variable
    level = next(
        (
            c
            for c in df.columns
            if c != name and isinstance(df[c], pd.Series) and homes.constant_within(df[c])
        ),
        None,
    )
    if level is None:
        return None
    if found is not None:
        found[name] = homes
    return (
        f"its values group consecutive records into {groups:,} households sharing {level}'s"
        " value (a household id)"
    )


def weight_by_data(col, homes: _Grouping) -> str | None:
    """Why a column is a household's sampling weight by its data (None if it is not), given the
    households (``codes``: each record's household): positive everywhere, none missing,
    constant within each household, and mostly fractional beyond amounts in cents (more than
    half the values with more than two decimals, as a calibrated weight 357.857142...; or,
    with few distinct values as design weights have, mostly non-integer and at least 10 on
    average). An amount in cents or an equivalence scale (1, 1.5, 1.8) is not taken."""
    if not isinstance(col, pd.Series) or not pd.api.types.is_float_dtype(col.dtype):
        return None
    x = col.to_numpy(dtype=np.float64)
    if not len(x) or not np.all(np.isfinite(x)) or x.min() <= 0:
        return None
    if not homes.constant_within(col):
        return None
    fractional = np.mean(x != np.round(x))
    cents = np.round(x * 100)
    finer = np.mean(np.abs(x * 100 - cents) > 1e-6 * np.maximum(1.0, np.abs(x * 100)))
    if finer <= 0.5 and not (
        fractional > 0.5 and x.mean() >= 10 and len(pd.unique(x)) <= homes.groups / 10
    ):
        return None
    return (
        "its values are positive, mostly fractional and constant within each household (a weight)"
    )


def nested_person_id(col, homes: _Grouping) -> str | None:
    """Why an integer column is a person id within the households ``homes`` (None if it is not):
    one value per record, and in the order of its values each household's records come together
    (EU-SILC's rb030 = household id · 100 + member, in a file in any order)."""
    x = _integers(col, floats=True)
    if x is None or len(x) < MIN_HOUSEHOLDS or homes.groups >= len(x):
        return None
    if _distinct(x)[0] < len(x):  # counted without a sort: a value shared by two records
        return None
    order = np.argsort(x, kind="stable")
    if not np.all(np.diff(x[order]) > 0):
        return None  # a value shared by two records
    home = homes.codes[order]
    if 1 + int(np.count_nonzero(home[1:] != home[:-1])) != homes.groups:
        return None
    return (
        "its values are distinct integers numbering the persons household by household (a person"
        " id)"
    )


def frame_roles(df: pd.DataFrame, exclude=(), household=None) -> dict:
    """Column -> (role, why) for the columns the survey rules read from the whole file: "household
    id" (``household_by_data``), "identifier" (a record id by its data, or a person id nested in
    the households) and "weight" (by its data), the last two within the declared ``household``
    or else the first household id found. Columns in
    ``exclude`` are not looked at (their roles are declared)."""
    skip = set(exclude) | ({household} if isinstance(household, str) else set(household or ()))
    roles, found = {}, {}
    if len(df) < MIN_HOUSEHOLDS and not household:
        return roles  # every rule by data needs MIN_HOUSEHOLDS records (a wide file of 6 rows)
    for c in df.columns:
        if c in skip or not isinstance(c, str) or not isinstance(df[c], pd.Series):
            continue
        why = household_by_data(df, c, found)
        if why:
            roles[c] = ("household id", why)
        elif why := person_id_by_data(c, df[c]):
            roles[c] = ("identifier", why)
    homes = [household] if isinstance(household, str) else list(household or ())
    homes = homes or [c for c, (role, _) in roles.items() if role == "household id"][:1]
    if homes and all(h in df.columns for h in homes):
        key = df[homes[0]] if len(homes) == 1 else pd.MultiIndex.from_frame(df[homes])
        grouping = found.get(homes[0]) if len(homes) == 1 else None
        grouping = grouping or _Grouping(key)
        for c in df.columns:
            if c in skip or c in roles or not isinstance(df[c], pd.Series):
                continue
            if why := weight_by_data(df[c], grouping):
                roles[c] = ("weight", why)
            elif why := nested_person_id(df[c], grouping):
                roles[c] = ("identifier", why)
    return roles
