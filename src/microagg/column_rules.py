"""The column rules: what makes a numeric column look like an identifier, category codes or a
sampling weight rather than a quantity to protect (``not_a_default_qi``). ``columns`` applies them
to choose the default quasi-identifiers and names the columns they leave out.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .errors import option_term
from .survey_rules import (
    person_id_by_data,
    survey_code_name,
    survey_id_name,
    survey_weight_name,
)

__all__ = [
    "named_code_reason",
    "looks_like_quantity_name",
    "QUANTITY_WORDS",
    "looks_like_identifier",
    "looks_like_codes",
    "leading_zero_codes",
    "looks_like_code_name",
    "not_a_default_qi",
    "looks_like_weight",
    "constant_column",
    "CONSTANT_REASON",
    "code_columns",
    "CODE_NAME_WORDS",
    "CAPITALS_CODE_PARTS",
    "FEW_VALUES",
    "CODE_MIN_ROWS",
    "REPEATS",
    "MANY_VALUES",
]


def looks_like_identifier(name, values) -> str | None:
    """Why column ``name`` looks like a record identifier (None if it does not): its name (id, ID,
    *_id, ident, ...; a survey programme's id: EU-SILC's db030 / rb030, IPUMS's SERIAL / PERNUM,
    hogar, id_hogar, menage, haushalt: ``survey_rules.survey_id_name``) or its values (a running
    number: n distinct integers filling a range of n; distinct integers numbering the records:
    ``survey_rules.person_id_by_data``)."""
    text = str(name)
    if isinstance(name, str) and (named := survey_id_name(text)):
        return named
    if (
        re.search(
            r"(?:^|[_\W])(?:[hp]?ids?|ident|identifier|key|nr|no)(?:$|[_\W])", text, re.IGNORECASE
        )
        or re.search(r"^(?:row|record|person|household)_?(?:num|number)$", text, re.IGNORECASE)
        or re.search(r"[a-z0-9](?:Id|ID)$", text)
        or text.lower() == "id"
        or _capital_id(text)
    ):
        return "its name says identifier"
    col = values
    if not isinstance(name, str):  # an array's positional columns: no names, no guessing
        return None
    if pd.api.types.is_integer_dtype(col.dtype) and len(col) >= 10 and col.is_unique:
        if int(col.max()) - int(col.min()) + 1 == len(col):
            return "its values are the distinct integers of a running number"
    return person_id_by_data(name, col)


#: English words ending in "id" that a name in capitals may end with without being an identifier
_NOT_ID_WORDS = (
    "paid",
    "aid",
    "said",
    "valid",
    "solid",
    "liquid",
    "fluid",
    "acid",
    "rapid",
    "humid",
    "hybrid",
    "vivid",
    "void",
    "avoid",
    "grid",
    "raid",
    "maid",
    "lipid",
    "pyramid",
    "android",
    "tabloid",
    "thyroid",
    "steroid",
    "opioid",
    "squid",
    "candid",
    "timid",
    "lucid",
    "morbid",
    "rigid",
    "stupid",
    "torrid",
    "placid",
    "insipid",
    "druid",
    "invalid",
)


def _capital_id(text: str) -> bool:
    """A name in capitals ending in ID, as UTILITYID, HHID or PERSONID (not PAID or VALID)."""
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_]*[A-Z0-9_]ID", text)) and not text.lower().endswith(
        _NOT_ID_WORDS
    )


#: Words that name a column of category codes: geography, classifications of occupations and
#: industries, administrative codes. Matched as whole words of the name (split at _, -, spaces,
#: digits and lower-to-upper case changes), for integer columns only.
CODE_NAME_WORDS = (
    "code",
    "codes",
    "region",
    "regio",
    "district",
    "municipality",
    "municip",
    "county",
    "province",
    "state",
    "country",
    "nuts",
    "zip",
    "zipcode",
    "postcode",
    "postal",
    "plz",
    "occupation",
    "occup",
    "isco",
    "nace",
    "isic",
    "naics",
    "sic",
    "soc",
    "industry",
    "sector",
    "branch",
    "fips",
    "geo",
    "geocode",
    "commune",
    "canton",
    "department",
    "ward",
    "village",
    "locality",
    "cluster",
    "psu",
    "strata",
    "stratum",
    "category",
    "class",
    "type",
    "status",
    "group",
    "grp",
)


#: Parts of a name in capitals, concatenated without separators as survey files write them
#: (COMPCODE, OCCUCODE, REGCODE, HHSIZE, HHTYPE), that say category codes or a count of persons
CAPITALS_CODE_PARTS = (
    "CODE",
    "REGIO",
    "OCCU",
    "SIZE",
    "TYPE",
    "CLASS",
    "STATUS",
    "GROUP",
    "ISCO",
    "NACE",
    "ISIC",
    "DISTR",
    "PROV",
    "COUNTY",
    "SECTOR",
    "INDUS",
    "BRANCH",
    "ZIP",
    "POSTC",
    "NUTS",
    "CAT",
)


def looks_like_code_name(name) -> str | None:
    """Why the name of an integer column says category codes (None if it does not): one of its
    words is in CODE_NAME_WORDS (region, occupation, isco, nace, zip, postcode, district, ...),
    or, for a name in capitals (COMPCODE, OCCUCODE, REGCODE, HHSIZE), it holds one of
    CAPITALS_CODE_PARTS: such names concatenate their words without a separator."""
    if not isinstance(name, str):
        return None
    if surveyed := survey_code_name(name):
        return surveyed
    words = re.split(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])", name)
    hit = next((w for w in words if w.lower() in CODE_NAME_WORDS), None)
    if hit is None and name == name.upper():
        hit = next((part for part in CAPITALS_CODE_PARTS if part in name), None)
    return None if hit is None else f"its name ({hit!r}) says category codes"


#: A numeric column of integers with fewer distinct values than this is taken for category codes
#: (sex, region, dwelling type: averaging them publishes codes that mean nothing), once the data
#: have CODE_MIN_ROWS records or more (fewer: too few to tell codes from a small sample).
FEW_VALUES = 20
CODE_MIN_ROWS = 2 * FEW_VALUES


#: An integer column is clearly continuous (an amount, a count of many values) only when its values
#: rarely repeat: at most REPEATS records per distinct value on average, or at least MANY_VALUES
#: distinct values. Codes repeat (free1's OCCUCODE: 226 codes, 18 records each; COMPCODE: 57, 70
#: each), whatever their name or its language; amounts do not (free1's INCOME: 1.9 records each).
REPEATS = 5
MANY_VALUES = 1000


def looks_like_codes(values) -> str | None:
    """Why a numeric column is left out of the default quasi-identifiers as possible category
    codes (None if it is not), for integer columns of at least CODE_MIN_ROWS records: fewer than
    FEW_VALUES distinct values, or values that repeat (more than REPEATS records per distinct
    value on average, fewer than MANY_VALUES distinct values): codes, or a discrete quantity
    (an age), which the default does not tell apart. The positive rule: an integer column is
    averaged by default only when it is clearly continuous; named in --columns / columns=, a
    repeating one is a quantity (``named_code_reason``)."""
    x = _integer_values(values)
    if x is None:
        return None
    distinct = _distinct_below(x, MANY_VALUES)
    if 1 < distinct < FEW_VALUES:
        return (
            f"{distinct} distinct integer values: category codes; to protect them as categories,"
            f" name the column in {option_term('categorical')} too"
        )
    if 1 < distinct < MANY_VALUES and len(x) > REPEATS * distinct:
        return (
            f"{distinct} distinct integer values, {len(x) / distinct:.0f} records each on average:"
            " repeating integers (codes, or a discrete quantity such as an age); to average them"
            f" name the column in {option_term('columns')} (or {option_term('continuous')}), to"
            f" protect them as categories in {option_term('categorical')}"
        )
    return None


def _integer_values(values) -> np.ndarray | None:
    """The present values of an integer-valued column as float64, for columns of at least
    CODE_MIN_ROWS records (None otherwise: fractions, non-finite values, bool, too few records)."""
    if len(values) < CODE_MIN_ROWS:  # before a Series is made (a wide file's 12,000 columns)
        return None
    col = pd.Series(values)
    if pd.api.types.is_bool_dtype(col.dtype):
        return None
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iuf":  # (no dropna: wide files)
        x = col.to_numpy(dtype=np.float64)
        x = x[~np.isnan(x)]
    else:
        x = col.dropna().to_numpy(dtype=np.float64)
    if not len(x) or not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
        return None
    return x


#: Words that name a quantity (an age, a count, hours, an amount, a score), in several languages:
#: an integer column whose name holds one is averaged when named as a quasi-identifier, however
#: few its values (children 0-6, household size 1-9, hours 0-60). Matched as whole words of the
#: name, or as the start of a word (AGE_GROUP is a code: its words are AGE and GROUP, and GROUP
#: says codes).
QUANTITY_WORDS = (
    "age",
    "alter",
    "edad",
    "eta",
    "hour",
    "hours",
    "hrs",
    "stunden",
    "horas",
    "heures",
    "count",
    "cnt",
    "children",
    "child",
    "kids",
    "persons",
    "members",
    "rooms",
    "size",
    "score",
    "api",
    "income",
    "amount",
    "wage",
    "salary",
    "earnings",
    "expend",
    "savings",
    "days",
    "weeks",
    "months",
    "years",
    "tenure",
    "duration",
    "height",
    "bmi",
    "points",
    "einkommen",
    "ingreso",
    "ingresos",
    "revenu",
    "reddito",
    "salario",
    "lohn",
    "gehalt",
    "anni",
    "jahre",
    "anos",
)


#: ... or a word that ends with one of these (hsize, famsize, hhcount, workhours)
QUANTITY_SUFFIXES = ("size", "count", "hours")


def looks_like_quantity_name(name) -> str | None:
    """The word of ``name`` that says a quantity (None if none does): a word of QUANTITY_WORDS
    (age, hours, children, size, score, income, edad, einkommen, ...), or a name in capitals
    starting with NUM (NUMYOUNG, NUMCHILD: a number of), unless another word says codes
    (AGE_GROUP, age_class)."""
    if not isinstance(name, str):
        return None
    words = [w.lower() for w in re.split(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])", name) if w]
    if any(w in CODE_NAME_WORDS for w in words):
        return None
    hit = next((w for w in words if w in QUANTITY_WORDS or w.endswith(QUANTITY_SUFFIXES)), None)
    if hit is None and name == name.upper() and re.match(r"NUM[A-Z]", name):
        hit = name
    return hit


def named_code_reason(name, col, labelled: bool = False) -> str | None:
    """Why an integer column the user named as a quasi-identifier is category codes (None: it is a
    quantity, averaged): value labels or an SPSS measure nominal / ordinal (``labelled``); a
    code-like name (region, occupation, isco, COMPCODE) unless a word of it says a quantity; or
    fewer than FEW_VALUES distinct integers (sex, a region number) unless its name says a
    quantity (children, hours, household size). Values that merely repeat (an age, a school's
    score: hundreds of values) are a quantity: a code list is told by what codes look like, not
    by repetition."""
    if labelled:
        return "value labels (or an SPSS measure nominal / ordinal) on its values: category codes"
    if not isinstance(name, str) or looks_like_quantity_name(name):
        return None
    x = _integer_values(col)
    if x is not None and 1 < _distinct_below(x, FEW_VALUES) < FEW_VALUES:
        return f"{_distinct_below(x, FEW_VALUES)} distinct integer values: category codes"
    return _code_name_of_integers(name, col)


#: why a constant column is left out of the default quasi-identifiers (when others remain)
CONSTANT_REASON = "one value in every record: nothing to protect"


def constant_column(col) -> str | None:
    """Why a numeric column of at least two records is not a default quasi-identifier for being
    constant (None if it takes two values or more): one value in every record (a survey year,
    a sample number) tells no record from another, and averaging it only rewrites it."""
    x = (col if isinstance(col, pd.Series) else pd.Series(col)).to_numpy()
    if len(x) < 2 or pd.isna(x).any() or not np.all(x == x[0]):
        return None
    return CONSTANT_REASON


#: an integer written with a leading zero ("0104", "007"): the text of a code (a postcode, a
#: NUTS or ISCO code), which a reader keeps as text because as a number it would lose the zero
_LEADING_ZERO = r"\s*[+-]?0\d+\s*"


def leading_zero_codes(col) -> str | None:
    """Why a column of numbers written as text holds category codes (None if it does not): some
    of its integers are written with a leading zero, which a number does not keep and a code
    does. Averaged, such a column would publish neither its codes nor their zeros."""
    texts = pd.Series(col, dtype=object)
    texts = texts[texts.map(lambda v: isinstance(v, str))]
    zeros = texts[texts.str.fullmatch(_LEADING_ZERO)]
    if zeros.empty:
        return None
    return (
        f"integers written with a leading zero, such as {zeros.iloc[0].strip()!r}: category codes;"
        f" to protect them as categories, name the column in {option_term('categorical')} too"
    )


def _distinct_below(x: np.ndarray, limit: int) -> int:
    """The number of distinct values of x, exact when below ``limit`` (else at least ``limit``):
    a prefix that already holds ``limit`` distinct values settles it without hashing the column
    (an amount column of 10^6 records: 0.14 s by np.unique, one prefix's hash here)."""
    import pandas as pd

    x = x + 0.0  # -0.0 -> 0.0: one value, as np.unique counts them (a hash tells them apart)
    prefix = 16 * limit
    if len(x) > prefix and len(pd.unique(x[:prefix])) >= limit:
        return limit
    return len(pd.unique(x))


def looks_like_weight(name) -> str | None:
    """Why column ``name`` looks like a survey weight (None if it does not): its name says weight
    (weight, wgt; a survey programme's weight: EU-SILC's db090 / rb050, IPUMS's HHWT / PERWT,
    gewicht, poids, peso, factor, ponderación: ``survey_rules.survey_weight_name``). A weight is
    not a quasi-identifier, and averaging it would change every estimate."""
    if isinstance(name, str) and re.search(
        r"weight|(?:^|[_\W])(?:w|p|f)?wgt(?:$|[_\W])", name, re.IGNORECASE
    ):
        return "its name says survey weight"
    return survey_weight_name(name)


def _code_name_of_integers(name, col) -> str | None:
    """What a code-like name says of an integral column (None otherwise); the name is looked at
    first, the values only when it says something (a wide file's columns)."""
    named = looks_like_code_name(name)
    return named if named is not None and _integral(col) else None


def _integral(col) -> bool:
    x = pd.Series(col).dropna().to_numpy(dtype=np.float64) if len(col) else np.zeros(0)
    return bool(len(x)) and bool(np.all(np.isfinite(x))) and bool(np.all(x == np.round(x)))


def not_a_default_qi(
    name, col, labelled: bool = False, identifier: str | None | bool = False
) -> str | None:
    """Why numeric column ``name`` is left out of the default quasi-identifiers (None: it is one):
    an identifier, a survey weight, or category codes (``labelled``: value labels on its values,
    or an SPSS measure nominal / ordinal; few distinct integers; integers that repeat, codes or
    a discrete quantity; integers under a code-like name such as region, occupation, isco, nace,
    zip), or one value in every record. The rules that need the whole file (a household id,
    weights constant within households) are ``survey_rules.frame_roles``. The one rule for the
    CLI, the library and the app. ``identifier``: looks_like_identifier's answer when the caller
    has it already (it reads the whole column)."""
    if identifier is False:
        identifier = looks_like_identifier(name, col)
    if identifier or looks_like_weight(name):
        return identifier or looks_like_weight(name)
    if labelled:
        return (
            "value labels (or an SPSS measure nominal / ordinal) on its values: category codes; to"
            f" protect them as categories, name the column in {option_term('categorical')}"
        )
    if not isinstance(name, str):  # an array's columns: no guessing
        return None
    coded = looks_like_codes(col) or constant_column(col)
    if coded:
        return coded
    named = _code_name_of_integers(name, col)
    return (
        None
        if named is None
        else (
            f"{named}; to protect them as categories, name the column in "
            f"{option_term('categorical')}"
        )
    )


def code_columns(df: pd.DataFrame, columns) -> dict:
    """Column -> why it is category codes (``named_code_reason``: value labels, an SPSS measure, a
    code-like name, few distinct integers unless the name says a quantity), for the numeric
    columns of ``columns`` (quasi-identifiers the user named, or the default ones) that are
    neither identifiers nor weights. Such columns are protected as categories unless declared
    continuous (``embedding.column_kinds``); other integer columns are quantities, averaged."""
    coded = set(df.attrs.get("category_codes", ()))
    out = {}
    for c in columns:
        col = df[c]
        if (
            isinstance(col, pd.DataFrame)
            or not pd.api.types.is_numeric_dtype(col.dtype)
            or pd.api.types.is_bool_dtype(col.dtype)
        ):
            continue
        if looks_like_identifier(c, col) or looks_like_weight(c):
            continue
        why = named_code_reason(c, col, labelled=c in coded)
        if why:
            out[c] = why.split(";")[0]
    return out
