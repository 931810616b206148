"""Record linkage by an intruder who knows the microaggregation method (Nin, Herranz & Torra,
"On the disclosure risk of multivariate microaggregation", Data & Knowledge Engineering 67(3):
399-412, 2008: a record linkage specific to microaggregation, which links more records than
distance-based record linkage, DBRL).

The intruder of the worst case holds the original QIs (as for DBRL) and knows the method, its
parameters and its seed (a manifest names them). She runs the method on the original herself and
so knows the groups and the very vector each record is published with; she then links a record to
one of the published records carrying that vector, chosen at random. The expected share of
records linked correctly is the mean over records of 1 / f, f the number of published records
whose QI vector equals the record's. DBRL instead links a record to the published vector nearest
its original values, which for a partition that is not a Voronoi diagram (MDAV's, V-MDAV's) is
sometimes another group's. A method that groups each variable on its own (individual ranking)
publishes vectors that few records share: the intruder finds most records (Nin & Torra 2009).

What this does not cover: a release the intruder cannot reproduce (noise drawn from a seed kept
secret) gives her no exact vector; the figure is then an upper bound.
"""

from __future__ import annotations

import numpy as np

__all__ = ["method_aware_linkage"]


def method_aware_linkage(published_qis) -> float | None:
    """The expected share of records linked correctly (mean of 1 / f over records, f the number of
    published records sharing the record's QI vector), from the published QI columns (a frame,
    values as read back; a missing value is a value of its own). None for no record."""
    from ..records import combination_codes

    n = len(published_qis)
    if n == 0:
        return None
    codes = combination_codes(published_qis, list(published_qis.columns))
    f = np.bincount(codes)[codes].astype(np.float64)
    return float(np.mean(1.0 / f))
