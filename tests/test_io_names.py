"""The column names the run options give, as the file's header spells them (``io.names``): one
rename per option value, for the options as given (``publication.opening``) and the validated
run's (``publication.stages``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microagg.io.names import option_in_header, options_in_header

_NAMES = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6, unique=True)


@given(_NAMES, st.lists(st.booleans(), min_size=6, max_size=6), st.integers(0, 5))
def test_each_value_takes_the_header_s_spelling_and_numbers_stay(names, spaced, one):
    """A hand-written header ' y' is named 'y': every kind of value (a list, one name, a
    mapping's keys, the one sample weight column) takes the header's spelling; numbers (weights
    per QI, sample weights per record) and names the header holds exactly stay as they are."""
    header = [f" {n}" if s else n for n, s in zip(names, spaced, strict=False)]
    spelt = dict(zip(names, header, strict=True))
    name = names[one % len(names)]
    options = {
        "columns": list(names),
        "strata": name,
        "ordinal": {n: [1, 2] for n in names},
        "weights": {n: 2.0 for n in names},
        "sample_weight": name,
        "keys": None,
    }
    renamed = options_in_header(options, header)
    assert renamed["columns"] == header and renamed["strata"] == [spelt[name]]
    assert list(renamed["ordinal"]) == header and list(renamed["weights"]) == header
    assert renamed["sample_weight"] == spelt[name] and "keys" not in renamed
    assert options_in_header(renamed, header) == renamed  # the header's own names stay
    numbers = np.arange(len(names), dtype=float) + 1
    for option in ("weights", "sample_weight"):
        assert option_in_header(option, numbers, header) is numbers
