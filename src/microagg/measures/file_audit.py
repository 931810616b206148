"""The audit of a published file: utility and disclosure risk, computed by one function from the
original, the published file and the run's roles (``audit_files``). The pipeline's measure stage,
``microagg protect`` (on its output file read back), ``microagg evaluate``, the report, the run
manifest and the app all show this one ``Audit``, so their figures agree to the last digit.
docs/audit.md explains every figure, its formula and its reference.

The disclosure measures are the pure functions of ``microagg.measures.risk``, registered by
``file_risk`` in the measure registry (``registry.measure``: name, label, unit, reference) with
this module's ``FileAudit`` as their inputs, group "risk":

* k-anonymity of the published combinations of the **key variables** (QIs + strata + declared
  keys), grouped exactly as a reader of the output groups them (Samarati 2001; Sweeney 2002);
* individual re-identification risk on the categorical key variables, with sampling weights
  (sdcMicro's ``measure_risk``; Benedetti & Franconi 1998; Franconi & Polettini 2004);
* l-diversity of declared sensitive columns (Machanavajjhala et al. 2007);
* interval disclosure of the continuous QIs: SDID (sdcMicro ``dRisk``) and robust-Mahalanobis-
  scaled intervals (RMDID1/2, sdcMicro ``dRiskRMD``; Templ & Meindl 2008), beside the rank
  intervals and distance-based record linkage of ``comparison``;
* whether the published file's row order follows a column (position links records).

Measures that pair each original record with its published one (``aligned``) need both files
in the same row order; on a shuffled output they come from the run (its manifest).
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

import numpy as np

from .audit_roles import DEFAULT_L, AuditRoles
from .comparison import Comparison
from .records import KeyFrequencies, blank_as_missing, column_arrays, key_frequencies
from .registry import Audit, Figure, in_registry_order, measures_of
from .registry import audit as audit_group
from .risk.closeness import t_closeness
from .risk.diversity import l_diversity
from .risk.individual import IndividualRisk, individual_risk
from .risk.order import RowOrder, row_order
from .risk.rmd import RMDRisk, rmd_interval_risk
from .utility import categorical_report

__all__ = [
    "AuditRoles",
    "FileAudit",
    "audit_files",
    "combine",
    "embedding_key",
    "DEFAULT_L",
    "RMD_MAX_FIT",
    "ROW_ORDER_SAMPLE",
]


#: the robust (MCD) location and scatter of RMDID are fitted on at most this many records, drawn
#: with the run's seed; the distances are then computed for every record. Measured on census-like
#: data, 2·10^4 × 13 after MDAV k = 3: fitted on 1,000 / 5,000 / all records, 0.35 / 0.95 / 2.8 s,
#: RMDID1 0.8997 / 0.8983 / 0.8992: the figure does not move, the default call's time does.
RMD_MAX_FIT = 1000
#: above this many records, the row-order signals (Spearman's rho with the row number, the share
#: of ascending adjacent pairs) are estimated on a fixed-seed sample of this many rows and as many
#: adjacent pairs: standard error at most 1/sqrt(10^5) = 0.0032 for rho (about (1 - rho^2)/sqrt(m))
#: and 0.5/sqrt(10^5) = 0.0016 for the share, against flag thresholds of 0.5 and 0.8; the
#: row-number check stays exact. 10^6 x 14 census-like columns: 2.29 -> 0.34 CPU s, the same flags
#: (benchmarks/results/default_call.md)
ROW_ORDER_SAMPLE = 100_000


def _floats(frame, columns) -> np.ndarray:
    from ..columns import quasi_identifiers

    return (
        quasi_identifiers(frame, list(columns), allow_missing=True)
        if columns
        else np.empty((len(frame), 0))
    )


def embedding_key(roles: AuditRoles) -> tuple:
    """The key of the original's embedding in an audit's ``cache`` (what it is built from): a run
    that embedded the original under these roles seeds it (``pipeline.audit``)."""
    return (
        "embedding",
        tuple(roles.columns),
        tuple(sorted(roles.kinds.items())),
        roles.standardize,
        repr(sorted(roles.ordinal_levels.items(), key=repr)),
    )


class FileAudit(Comparison):
    """The inputs of the file measures: the original and the published frames (every column),
    the roles, and how the published key variables are grouped.

    ``published``: the published file in the original's row order when ``aligned`` (else in its
    own order: the measures that pair records are left out); ``grouped``: the key variables as a
    reader of the output groups them (the CSV text, the values the format's library reads), by
    default the published frame's; ``sample_weights``: one weight per published record (default:
    the published frame's ``roles.sample_weight`` column); ``seed``: the MCD's (RMDID);
    ``frequencies``: ``key_frequencies`` of ``grouped`` on the key variables when counted already
    (the read-back check's), used when no key value is missing (the wildcard then changes
    nothing)."""

    def __init__(
        self,
        original,
        published,
        roles: AuditRoles,
        *,
        grouped=None,
        sample_weights=None,
        aligned: bool = True,
        seed: int | None = 0,
        cache: dict | None = None,
        frequencies: KeyFrequencies | None = None,
    ):
        self.original, self.published_frame, self.roles = original, published, roles
        self.counted = frequencies
        self.aligned, self.seed = bool(aligned), seed
        self.cache = (
            {} if cache is None else cache
        )  # what depends on the original only, across audits
        self.grouped = grouped
        self.sample_weights = sample_weights
        cont = roles.continuous
        super().__init__(
            _floats(original, cont),
            _floats(published, cont),
            None,
            roles.p,
            published[list(roles.columns)],
        )

    # --- IL over every QI column, on the run's embedding of the original -----------------------
    @cached_property
    def embedding(self):
        import warnings

        from ..embedding import embed

        r = self.roles
        key = embedding_key(r)
        if key not in self.cache:
            with warnings.catch_warnings():  # (a constant column was told once, by the run)
                warnings.simplefilter("ignore")
                self.cache[key] = embed(
                    self.original,
                    list(r.columns),
                    dict(r.kinds),
                    r.standardize,
                    dict(r.ordinal_levels),
                )
        return self.cache[key]

    @cached_property
    def scaled(self) -> tuple[np.ndarray, np.ndarray]:
        emb = self.embedding
        if not emb.categorical_columns and list(emb.numeric_columns) == list(self.roles.continuous):
            # every QI continuous, in this order: the embedding of the published values is their
            # z-scores (``Embedding.embed``), and ``Xp`` holds those values already
            return emb.matrix, np.ascontiguousarray(emb.scaler.transform(self.Xp_all))
        return emb.matrix, emb.embed(*emb.values_of(self.published_frame))

    # --- disclosure ------------------------------------------------------------------------------
    @cached_property
    def key_view(self):
        keys = self.roles.key_variables
        view = (self.grouped if self.grouped is not None else self.published_frame)[keys]
        # a CSV's text: an empty field is a missing value (a suppressed key matches any value)
        view = blank_as_missing(view) if self.grouped is not None else view
        declared = [c for c in self.roles.keys if c in view.columns]
        if self.roles.missing and declared:  # a declared token: missing, as to the planner
            from .records import missing_as_na

            view = view.copy()
            view[declared] = missing_as_na(view, declared, self.roles.missing)
        return view

    @cached_property
    def keys_missing(self) -> bool:
        """Some key value is missing (suppressed): wildcard counts differ from plain ones."""
        return bool(self.key_view.isna().to_numpy().any())

    @cached_property
    def frequencies(self) -> KeyFrequencies:
        r, counted = self.roles, self.counted
        if (
            counted is not None
            and list(counted.keys) == list(r.key_variables)
            and counted.k == r.k
            and not self.keys_missing
        ):
            return counted  # the read-back check's count of the same keys
        # a missing key value (a suppressed one) matches any value, as sdcMicro's freqCalc counts it
        return key_frequencies(self.key_view, r.key_variables, r.k, missing="wildcard")

    @cached_property
    def published_frequencies(self) -> KeyFrequencies:
        r = self.roles
        if list(r.key_variables) == list(r.columns):  # the key variables are the QIs
            if self.grouped is None:
                return self.frequencies  # the same combinations
            if not self.keys_missing and self._texts_name_values():
                # grouping by text is grouping by value: the same combinations, numbered alike
                found = self.frequencies
                return KeyFrequencies(tuple(r.columns), 1, found.combination, found.fk)
        return Comparison.published_frequencies.func(self)

    def _texts_name_values(self) -> bool:
        """Every QI column's texts as grouped (``grouped``) and its published values as read form
        one grouping: each text reads as one value and no two texts as the same value (a file
        written by microagg's writer: one text per value). Checked, not assumed: a scatter, a
        gather and the distinct values (0.4 -> 0.1 s at 10^6 x 6)."""
        import pandas as pd

        columns = list(self.roles.columns)
        texts, published = self.key_view, self.published
        if list(texts.columns) != columns or list(published.columns) != columns:
            texts, published = texts[columns], published[columns]
        if not all(isinstance(t, pd.CategoricalDtype) for t in texts.dtypes) or not all(
            isinstance(t, np.dtype) and t.kind in "fiu" for t in published.dtypes
        ):
            return False
        # the dtypes first, then one array per column without a Series (12,000 columns: issue 57)
        for j, values in enumerate(column_arrays(published, columns)):
            text = texts.iloc[:, j].array  # a Categorical
            codes = np.asarray(text.codes, dtype=np.int64)
            record = np.full(len(text.categories), -1, dtype=np.int64)
            record[codes] = np.arange(len(codes))  # a record of each text (any one)
            used = record >= 0
            value_of = np.zeros(len(record), dtype=values.dtype)
            value_of[used] = values[record[used]]
            if len(pd.unique(value_of[used])) != int(used.sum()):
                return False  # two texts read as one value
            if not np.array_equal(value_of[codes], values, equal_nan=values.dtype.kind == "f"):
                return False  # one text read as two values
        return True

    @cached_property
    def published_rows(self) -> np.ndarray:
        if set(self.roles.continuous) == set(self.roles.columns) and self.X is self.X_all:
            # every QI continuous and none missing: the same records
            return self.published_frequencies.combination
        return Comparison.published_rows.func(self)

    @cached_property
    def weights(self):
        if self.sample_weights is not None:
            return np.asarray(self.sample_weights, dtype=np.float64)
        sw = self.roles.sample_weight
        return (
            None
            if sw is None or sw not in self.published_frame.columns
            else self.published_frame[sw]
        )

    @cached_property
    def individual(self) -> IndividualRisk | None:
        keys = self.roles.categorical_keys
        if not keys:
            return None
        try:
            return individual_risk(
                self.key_view,
                keys,
                None if self.weights is None else np.asarray(self.weights, dtype=np.float64),
                missing="wildcard",
            )
        except ValueError as exc:  # weights below 1: the model needs F >= f
            self._notes.append(f"individual risk not computed: {exc}")
            return None

    @cached_property
    def _notes(self) -> list:
        return []

    @cached_property
    def _with_sensitive(self):
        """The key view with the published sensitive columns beside it (l-diversity, t)."""
        frame = self.key_view.copy()
        for c in self.roles.sensitive:
            frame[c] = self.published_frame[c].to_numpy()
        return frame

    @cached_property
    def diversity(self) -> dict:
        r = self.roles
        if not r.sensitive:
            return {}
        return l_diversity(self._with_sensitive, r.key_variables, list(r.sensitive), r.l)

    @cached_property
    def closeness(self) -> dict:
        """{sensitive column: the largest EMD of a key combination to the file} (t-closeness)."""
        r = self.roles
        if not r.sensitive:
            return {}
        return t_closeness(self._with_sensitive, r.key_variables, list(r.sensitive))

    @cached_property
    def rmd(self) -> RMDRisk | None:
        if not self.X.shape[1]:
            return None
        key = ("rmd", tuple(self.roles.continuous), self.seed)
        try:
            out = rmd_interval_risk(
                self.X,
                self.Xp,
                seed=self.seed,
                max_fit=RMD_MAX_FIT,
                distances=self.cache.get(key),
                published_rows=self.published_rows,
                sd=self.sample_sds[0],
            )
            self.cache[key] = out.rmd
            return out
        except ValueError as exc:
            self._notes.append(f"RMD interval disclosure not computed: {exc}")
            return None

    @cached_property
    def order(self) -> RowOrder:
        return row_order(self.published_frame, sample=ROW_ORDER_SAMPLE)

    def warnings(self) -> tuple:
        out = list(self.frequencies.warnings())
        if self.individual is not None:
            out += self.individual.warnings()
        for ld in self.diversity.values():
            out += ld.warnings()
        if self.order.informative:
            parts = []
            for s in self.order.signals:
                if s.informative:
                    parts.append(
                        f"{s.column} (= row number + {s.row_number_offset:g})"
                        if s.row_number_offset is not None
                        else f"{s.column} (rank correlation {s.spearman:+.2f})"
                    )
            out.append(
                "the published file's row order follows "
                + ", ".join(parts)
                + ": position can link a published record to its respondent in any file kept in "
                "the same order; publish with --shuffle (shuffle=True)"
            )
        return tuple(out) + tuple(self._notes)


def audit_files(
    original,
    published,
    roles: AuditRoles,
    *,
    grouped=None,
    sample_weights=None,
    aligned: bool = True,
    seed: int | None = 0,
    read_back: str | None = None,
    cache: dict | None = None,
    paired_only: bool = False,
    frequencies: KeyFrequencies | None = None,
    order=None,
) -> Audit:
    """The audit of a published file (groups "utility" and "risk", the categorical QIs' changes,
    the warnings): every registered file measure on ``FileAudit(original, published, roles, ...)``.

    original, published: DataFrames (the published file in the original's row order when
    ``aligned``); grouped: the key variables as the output's reader groups them; read_back:
    how they were read (said in the context); cache: a dict kept across audits of the same
    original (the embedding, the robust distances), as ``explore`` keeps one; paired_only: only
    the measures that pair records, and no warnings (what ``combine`` takes from the audit of a
    shuffled file's records put back in order); frequencies: ``key_frequencies`` of ``grouped``
    on the key variables when counted already (``FileAudit``); order: the published file's rows
    are the original's in this order (a shuffled file: a permutation, held in memory only), so
    the measures that pair records see the file's records put back in the original's order and
    every other figure is the file's as it is (``combine``). Deterministic: the same inputs give
    the same figures to the last digit, whichever front end computes them."""
    common = {"sample_weights": sample_weights, "seed": seed, "read_back": read_back}
    if order is not None:
        return _audit_reordered(
            original, published, roles, grouped, cache, frequencies, order, common
        )
    files = FileAudit(
        original,
        published,
        roles,
        grouped=grouped,
        sample_weights=sample_weights,
        aligned=aligned,
        seed=seed,
        cache=cache,
        frequencies=frequencies,
    )
    return _audited(files, roles, cache, paired_only, aligned, read_back)


def _audited(files: FileAudit, roles, cache, paired_only: bool, aligned: bool, read_back):
    """Every registered file measure on ``files`` (``audit_files``)."""
    from threadpoolctl import threadpool_limits

    wide = len(roles.continuous) > AUDIT_MATRIX_COLUMNS
    # one BLAS/OpenMP thread, as the kernels run: the audit's linear algebra is on small matrices
    # (the MCD's c-steps on RMD_MAX_FIT records, d × d covariances), where a second thread gains
    # nothing on a free core and spins against busy ones (benchmarks/results/default_call.md)
    with threadpool_limits(limits=1):
        if wide:
            result, notes = _wide_figures(files, cache, paired_only)
        else:
            result = audit_group(files, "utility", paired_only).with_figures(
                audit_group(files, "risk", paired_only)
            )
            notes = ()
        categories = _categorical_changes(files)
        warnings = () if paired_only else files.warnings() + notes
    figures = in_registry_order(result.figures) if wide else result.figures
    context = _context(roles, aligned, read_back, wide)
    if roles.sensitive and not paired_only:  # t-closeness per sensitive column
        context["tcloseness_emd"] = dict(files.closeness)
    return Audit(figures, categories, warnings, context)


def _audit_reordered(original, published, roles, grouped, cache, frequencies, order, common):
    """``audit_files`` of a file published in ``order``: the file as it is, and the measures that
    pair records on its records put back in the original's order (``combine``)."""
    import numpy as np

    read_back = common["read_back"]
    given = {"sample_weights": common["sample_weights"], "seed": common["seed"], "cache": cache}
    as_published = FileAudit(
        original, published, roles, grouped=grouped, aligned=False, frequencies=frequencies, **given
    )
    undo = np.argsort(np.asarray(order))
    paired = FileAudit(
        original,
        published.iloc[undo].reset_index(drop=True),
        roles,
        grouped=None if grouped is None else grouped.iloc[undo].reset_index(drop=True),
        **given,
    )
    return combine(
        _audited(paired, roles, cache, True, True, read_back),  # combine takes only these
        _audited(as_published, roles, cache, False, False, read_back),
    )


def _wide_figures(files: FileAudit, cache, paired_only: bool) -> tuple[Audit, tuple]:
    """The figures of a file with more than AUDIT_MATRIX_COLUMNS continuous QIs: the d×d measures
    (their cost grows as d^3) on the first AUDIT_MATRIX_COLUMNS of them, the others on all; and
    the note that says so."""
    roles = files.roles
    result = _audit_measures(files, skip=MATRIX_MEASURES, paired_only=paired_only)
    matrix = FileAudit(
        files.original,
        files.published_frame,
        _first_continuous(roles, AUDIT_MATRIX_COLUMNS),
        grouped=files.grouped,
        sample_weights=files.sample_weights,
        aligned=files.aligned,
        seed=files.seed,
        cache=cache,
    )
    result = result.with_figures(
        _audit_measures(matrix, only=MATRIX_MEASURES, paired_only=paired_only)
    )
    note = (
        "correlation, covariance, eigenvalue, principal-component and RMD figures on the "
        f"first {AUDIT_MATRIX_COLUMNS} of the {len(roles.continuous):,} continuous "
        "quasi-identifiers (their cost grows with the cube of the columns); the other "
        "figures on all of them"
    )
    return result, (note,)


def _categorical_changes(files: FileAudit) -> dict:
    """The categorical QIs' changes (``categorical_report``), when the rows are aligned."""
    roles = files.roles
    continuous = set(roles.continuous)
    categorical = [c for c in roles.columns if c not in continuous]
    if not (categorical and files.aligned):
        return {}
    return categorical_report(files.original[categorical], files.published_frame[categorical])


def _context(roles: AuditRoles, aligned: bool, read_back: str | None, wide: bool) -> dict:
    """What the figures were computed on: the key variables, the categorical keys, whether the
    rows were aligned, how the key variables were read, the matrix measures' columns."""
    context = {
        "key_variables": [str(c) for c in roles.key_variables],
        "categorical_keys": [str(c) for c in roles.categorical_keys],
        "rows_aligned": bool(aligned),
        "grouped_as": read_back or "the published data as given",
    }
    if wide:
        context["matrix_columns"] = [
            str(c) for c in _first_continuous(roles, AUDIT_MATRIX_COLUMNS).continuous
        ]
    return context


#: the audit's d×d measures (correlations, covariances, eigenvalues, principal components, the
#: robust Mahalanobis intervals) look at most at this many continuous QI columns (the first ones)
AUDIT_MATRIX_COLUMNS = 100
MATRIX_MEASURES = (
    "delta_r_mean",
    "delta_r_std",
    "covariance_mae",
    "covariance_variation_percent",
    "eigenvalue_discrepancy_percent",
    "eigen_sdcmicro",
    "delta_w",
    "fpc_percent_original",
    "fpc_percent_protected",
    "interval_rmd_risk1",
    "interval_rmd_risk2",
)


def _first_continuous(roles: AuditRoles, count: int) -> AuditRoles:
    """The roles with only the first ``count`` continuous QI columns (the categorical ones kept)."""
    keep, continuous = set(roles.continuous[:count]), set(roles.continuous)
    columns = tuple(c for c in roles.columns if c in keep or c not in continuous)
    return dataclasses.replace(
        roles, columns=columns, kinds={c: roles.kinds[c] for c in columns if c in roles.kinds}
    )


def _audit_measures(files, *, skip=(), only=None, paired_only: bool = False) -> Audit:
    """The "utility" and "risk" figures of ``files``: every registered measure but ``skip`` (or only
    those in ``only``), in registration order, those that pair records left out when unaligned
    (``paired_only``: only those)."""
    aligned = getattr(files, "aligned", True)
    figures = [
        Figure(m, m.compute(files), group)
        for group in ("utility", "risk")
        for m in measures_of(group)
        if m.name not in skip
        and (only is None or m.name in only)
        and (aligned or not m.aligned)
        and (m.aligned or not paired_only)
    ]
    return Audit(tuple(f for f in figures if f.value is not None))


def combine(paired: Audit, as_published: Audit) -> Audit:
    """The audit of a file published in another order than its original (shuffled): the measures
    that pair records (``aligned``) from ``paired`` (the file's records put back in the original's
    order), every other figure, the warnings and the context from ``as_published`` (the file as
    it is), so that ``evaluate`` on the file itself recomputes the latter to the last digit."""
    keep = tuple(f for f in paired.figures if f.measure.aligned)
    rest = tuple(f for f in as_published.figures if not f.measure.aligned)
    return Audit(
        in_registry_order(keep + rest),
        paired.categories,
        as_published.warnings,
        {
            **as_published.context,
            "rows_aligned": False,
            "paired_measures": (
                "the file's records put back "
                "in the original's order by the run's permutation (kept in memory only)"
            ),
        },
    )
