"""What a run returns: ``Result`` with typed parts instead of string keys.

The public contract: ``data, labels, information_loss, sse, sst, lower_bound, gap,
method, params, seconds, group_sizes`` (and k, columns, per_variable, scaler, standardized). The
run's facts are typed parts: ``audit`` (every figure of the run, from the measure registry),
``bound`` (the proven bound before its conversions), ``strata`` (each stratum's run and the
merges), ``portfolio`` (auto's members), ``weights`` (variable and sampling weights),
``publication`` (what a group publishes) and ``method_facts`` (what the method itself reported:
iterations, colgen's state, ...). ``extras`` is a read-only dict view of them with the keys of
earlier versions, kept for scripts that read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputError
from .measures import Audit
from .standardize import Standardizer
from .summary_lines import closeness_lines, households_line, privacy_lines, suppression_lines

__all__ = [
    "Result",
    "PendingAudit",
    "StratumRun",
    "StrataReport",
    "Portfolio",
    "Weights",
    "Publication",
    "Bound",
]


@dataclass(frozen=True)
class StratumRun:
    """The method's run inside one stratum (groups never cross strata)."""

    name: str
    members: list  # the original strata this one merges (one unless small strata were merged)
    records: int
    sse: float  # on the (weighted) standardised data the method saw
    lower_bound: float | None
    method_facts: dict

    def as_dict(self) -> dict:
        entry = {
            "stratum": self.name,
            "members": self.members,
            "records": self.records,
            "sse": self.sse,
        }
        if self.lower_bound is not None:
            entry["lower_bound"] = self.lower_bound
        if self.method_facts:
            entry["extras"] = self.method_facts
        return entry


@dataclass(frozen=True)
class StrataReport:
    runs: tuple  # StratumRun per stratum, in code order
    merges: tuple  # {"stratum", "size", "merged_into"} per merge of a stratum smaller than k
    published: str | None = None  # merged_strata when strata were merged: "recode" or "suppress"
    mapping: tuple = ()  # {"stratum", "published_as"}: what each merged stratum's records publish


@dataclass(frozen=True)
class Portfolio:
    """auto's members: one row per member ({method, il, sse, seconds, status, ...}) and the
    winner."""

    rows: tuple
    winner: str | None

    @classmethod
    def of(cls, facts: dict) -> Portfolio | None:
        """From a portfolio method's reported facts (rows under "portfolio", the winner's name)."""
        if "portfolio" not in facts:
            return None
        return cls(tuple(facts["portfolio"]), facts.get("winner"))

    def lines(self, prefix: str = "") -> list[str]:
        lines = [f"{prefix}auto: winner {self.winner}"]
        for row in self.rows:
            if row.get("status") == "ok":
                bound = (
                    f", lower bound IL {row['lower_bound_il']:.4f}%"
                    if "lower_bound_il" in row
                    else ""
                )
                mark = "*" if row["method"] == self.winner else " "
                lines.append(
                    f"  {mark} {row['method']:14s} IL {row['il']:.4f}%  {row['seconds']:.2f}"
                    f" s{bound}"
                )
            else:
                lines.append(f"    {row['method']:14s} {row.get('status')}")
        return lines


@dataclass(frozen=True)
class Weights:
    variable: dict | None = None  # QI column -> weight in the distance
    sample_weight: str | None = None  # the sampling-weight column ("array" for an array)


@dataclass(frozen=True)
class Publication:
    """What a group publishes: the continuous aggregation (and its parameters' values, e.g. trim),
    the QI kinds, the distance option (the whitening) the method grouped on and, when the
    published values are not the group means, the SSE to the means for comparison."""

    aggregation: str = "mean"
    parameters: dict = field(default_factory=dict)
    distance: str = "euclidean"
    kinds: dict = field(default_factory=dict)
    sse_to_group_means: float | None = None
    note: str | None = None

    @property
    def plain(self) -> bool:
        """Group means of continuous columns only (nothing to say)."""
        return self.note is None


@dataclass(frozen=True)
class Bound:
    """The method's proven bound before it became ``Result.lower_bound`` (on the SSE of the
    standardised QIs): on the whitened SSE (a non-euclidean distance) and on the weighted SSE
    (variable weights)."""

    whitened: float | None = None
    weighted: float | None = None


class PendingAudit:
    """The published data's file audit of an API call, computed when ``Result.audit`` is first read
    (the default call then costs the protection, not the audit nobody read: issue 45). Holds what
    ``pipeline.audit`` needs (the original, the published data in the input's order, the roles,
    the run's embedding); ``compute`` returns the file audit."""

    def __init__(self, compute, *args, embedding=None):
        self._compute, self._args = compute, args
        self.embedding = embedding  # the run's embedding of the original (seeds a file audit's)

    def compute(self):
        return self._compute(*self._args)

    @property
    def original(self):
        """The input as the call loaded it (the report's original values), if the audit holds it."""
        return getattr(self._args[0], "frame", None) if self._args else None


@dataclass
class Result:
    """What ``microaggregate`` returns: the protected data, the partition and the run's figures.

    Attributes
    ----------
    data : DataFrame, ndarray, polars.DataFrame or pyarrow.Table
        The protected data: the input's kind and shape, the same rows in the same order (unless
        ``shuffled``), every column other than the QIs (and recoded strata) unchanged.
    labels : ndarray
        Each record's group (per-variable methods: one column per QI).
    information_loss : float
        IL = 100·SSE/SST on the z-scores, in percent.
    sse, sst : float
        Within-group and total sums of squares on the z-scores.
    lower_bound, gap : float or None
        A proven lower bound on the optimal SSE and the gap 100·(SSE − bound)/SSE, when the
        method proves one.
    method : str
        The method that ran.
    params : dict
        The method's parameters as given.
    seconds : float
        The protection's wall time (the audit is not part of it).
    group_sizes : ndarray
        The size of each group.
    k : int
        The minimum group size.
    columns : list
        The quasi-identifier columns.
    audit : Audit
        The run's figures and the published data's audit (``audit.group("utility")``,
        ``audit.group("risk")``, ``audit.warnings``), the latter computed when ``audit`` is first
        read (docs/performance.md).
    strata, portfolio, weights, publication, bound
        Typed facts of the run: strata and their merges, ``auto``'s members, the weights, what a
        group publishes, the method's bound.
    """

    data: Any  # same kind as the input: DataFrame or ndarray
    labels: np.ndarray
    information_loss: float
    sse: float
    sst: float
    lower_bound: float | None
    gap: float | None
    method: str
    params: dict
    seconds: float
    group_sizes: Any  # sizes of groups 0..g-1 (per-variable methods: one array per column)
    k: int
    columns: list
    per_variable: bool = False  # labels (n, d): each QI column grouped on its own
    scaler: Standardizer | None = None  # the run's standardisation of the QI columns
    standardized: np.ndarray | None = (
        None  # the QI columns as the run measured them (scaler applied)
    )
    # with categorical QIs, ``standardized`` is the Gower-type embedding (microagg.embedding) and
    # ``scaler`` z-scores only the continuous values and ordinal ranks; with nominal QIs of many
    # levels, a ``microagg.onehot.OneHot`` (codes; ``np.asarray`` the dense one, within its bound)
    audit: Audit = field(default_factory=Audit)
    bound: Bound = field(default_factory=Bound)
    strata: StrataReport | None = None
    portfolio: Portfolio | None = None
    weights: Weights = field(default_factory=Weights)
    publication: Publication = field(default_factory=Publication)
    method_facts: dict = field(default_factory=dict)  # the method's own report (no strata)
    changed_columns: list | None = (
        None  # columns published anew: the QIs and recoded stratum columns
    )
    shuffled: bool = False  # data's rows are in a random order (labels and the audit: the input's)
    audit_roles: Any = None  # measures.AuditRoles: the roles the published data were audited with
    # publication.PublishedFile: the file published (microagg.protect, the command line, the app)
    file: Any = None
    time_cut: bool = False  # the time limit ended the run (not its work budget): not reproducible
    suppression: Any = (
        None  # suppression.Suppression: key values set missing (local suppression), None: no keys
    )
    # (column, why) of the numeric columns the default rules left out of the quasi-identifiers
    # (ids, household ids, weights, codes): published unchanged, named in the summary
    left_out: tuple = ()
    pending_audit: Any = field(
        default=None, repr=False, compare=False
    )  # PendingAudit: the file audit, on first read

    def __post_init__(self):
        if self.changed_columns is None:
            self.changed_columns = list(self.columns)

    @property
    def _run_audit(self) -> Audit:
        """The audit as known without computing a pending file audit: the run's own figures (IL,
        the bound, weighted IL, the categorical QIs' changes) are in it from the call on."""
        return self.__dict__["_audit"]

    def __getstate__(self) -> dict:
        """A pickled Result is complete: its file audit is computed first (the app's run process
        pickles its Result; the audit's inputs, the original frame among them, stay here)."""
        self.audit  # noqa: B018 (computes a pending audit)
        state = dict(self.__dict__)
        state.pop("_original", None)  # the input is the caller's: never pickled with the result
        return state

    def __repr__(self) -> str:
        """One line (the dataclass's repr printed every field: 17 KB): method, k, IL, the smallest
        group. ``summary()`` says it in words, ``_repr_html_`` shows it in a notebook."""
        from .display import result_repr

        return result_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's display: the run's figures, the risk, IL per variable, the group sizes."""
        from .display import result_html

        return result_html(self)

    def report(self, path=None, original=None, *, settings: dict | None = None, p: float = 10.0):
        """The HTML report (``microagg.report``: parameters, IL, risk, utility, figures).

        ``path``: where to write it (.html, atomically; returns the path), or None to return the
        HTML as a string. ``original``: the data given to ``microaggregate``; by default the input
        this result was computed from, when it still holds it (an API call's result does).
        """
        from .report import render_report, write_report

        if original is None:
            pending = self.__dict__.get("pending_audit")
            original = pending.original if pending is not None else self.__dict__.get("_original")
        if original is None:
            raise InputError(
                "this result holds no original data to report on: pass it, res.report(original=df)"
            )
        if path is None:
            return render_report(self, original, settings, p=p)
        return write_report(path, self, original, settings, p=p)

    def plot(self, kind: str = "il", ax=None):
        """A matplotlib figure (optional dependency): ``kind="il"`` the information loss per
        variable, ``"sizes"`` the group sizes. Returns the Axes."""
        from .display import plot

        return plot(self, kind, ax)

    def measured(self, values) -> np.ndarray:
        """Continuous QI values (n, d) in the units the run measured IL in (its own scaler).

        With categorical QIs the run measured the embedding, which is ``standardized`` itself."""
        if any(kind != "continuous" for kind in self.publication.kinds.values()):
            raise InputError(
                "measured() maps continuous QI values; with categorical QIs use Result.standardized"
            )
        return self.scaler.transform(np.asarray(values, dtype=np.float64))

    @property
    def lower_bound_il(self) -> float | None:
        """The lower bound expressed as information loss (percent)."""
        return self._run_audit.get("lower_bound_il")

    @property
    def all_group_sizes(self) -> np.ndarray:
        """Every group's size (a per-variable method: the groups of every column together)."""
        return (
            np.concatenate(self.group_sizes) if self.per_variable else np.asarray(self.group_sizes)
        )

    @property
    def continuous_columns(self) -> list:
        """The QI columns measured as numbers (the file measures' columns)."""
        kinds = self.publication.kinds
        return [c for c in self.columns if kinds.get(str(c), "continuous") == "continuous"]

    @property
    def extras(self) -> dict:
        """A dict view of the typed parts with the keys of earlier versions (read only: a copy)."""
        out: dict = {}
        if self.strata is not None:
            out["strata"] = [run.as_dict() for run in self.strata.runs]
            if self.strata.merges:
                out["merged_strata"] = list(self.strata.merges)
        else:
            out.update(self.method_facts)
        pub = self.publication
        if pub.distance != "euclidean":
            out["distance"] = pub.distance
        if not pub.plain:
            out["aggregation"] = pub.aggregation
            out.update(pub.parameters)
            out["kinds"] = dict(pub.kinds)
            out["sse_to_group_means"] = pub.sse_to_group_means
            out["representatives_note"] = pub.note
        if self.bound.whitened is not None:
            out["whitened_lower_bound"] = self.bound.whitened
        if self.weights.variable is not None:
            out["weights"] = dict(self.weights.variable)
            out["weighted_information_loss"] = self._run_audit.get("weighted_information_loss")
            if self.bound.weighted is not None:
                out["weighted_lower_bound"] = self.bound.weighted
        if self.weights.sample_weight is not None:
            out["sample_weight"] = self.weights.sample_weight
        if self._run_audit.categories:
            out["categories"] = {c: dict(m) for c, m in self._run_audit.categories.items()}
        return out

    def portfolios(self) -> list:
        """(prefix, Portfolio) of the run, or of every stratum that ran a portfolio."""
        if self.portfolio is not None:
            return [("", self.portfolio)]
        if self.strata is None:
            return []
        return [
            (f"stratum {run.name}: ", Portfolio.of(run.method_facts))
            for run in self.strata.runs
            if Portfolio.of(run.method_facts) is not None
        ]

    def summary(self) -> str:
        a = self.audit
        lines = [
            (
                f"method {self.method}, k = {self.k}, {len(self.labels)} records, "
                f"{len(self.columns)} quasi-identifiers"
            ),
            (
                f"information loss {self.information_loss:.4f}% (SSE {self.sse:.6g} of SST"
                f" {self.sst:.6g})"
            ),
            (
                f"groups: {a['groups']}, sizes {a['group_size_min']}..{a['group_size_max']}"
                if not self.per_variable
                else f"groups per variable: sizes {a['group_size_min']}..{a['group_size_max']}"
            ),
        ]
        lines.extend(self._missing_lines())
        if self.lower_bound is not None and (self.lower_bound_il is None or self.gap is None):
            lines.append(f"lower bound SSE {self.lower_bound:.6g}")  # (SST 0: no percentage)
        elif self.lower_bound is not None:
            lines.append(
                f"lower bound {self.lower_bound_il:.4f}% (SSE {self.lower_bound:.6g}), gap"
                f" {self.gap:.3f}%"
            )
        lines.extend(self._facts_lines())
        lines.extend(self._left_out_lines())
        if self.per_variable:
            lines.append(
                "warning: each variable was grouped on its own (individual ranking); combinations"
                " of values are NOT k-anonymous and the disclosure risk is higher than with"
                " multivariate methods"
            )
        lines.extend(self._audit_lines())
        lines.append(f"{self.seconds:.3f} s")
        if self.time_cut:
            from .deadline import TIME_CUT_NOTE

            lines.append(
                f"{TIME_CUT_NOTE} (bound the run by work, option work / --work, to reproduce it)"
            )
        return "\n".join(lines)

    def _missing_lines(self) -> list[str]:
        """Missing QI values, when there are: published missing, the means over present values
        (``missing_values``)."""
        context = self._run_audit.context
        missing = context.get("missing_values")
        if not missing:
            return []
        thin = context.get("means_below_k_present", 0)
        where = (
            f"every published mean is over at least {self.k} present values"
            if not thin
            else f"{thin} published values are means over fewer than {self.k} present values"
        )
        return [
            f"missing values: {missing} QI values missing, published missing; group means over"
            f" the present values, {where}; IL over the present values"
        ]

    def _audit_lines(self) -> list[str]:
        return self._audit_lines_of(self.audit)

    def _left_out_lines(self) -> list[str]:
        """The numeric columns the default rules left out of the quasi-identifiers, one line per
        rule: the columns, why, and how to declare them (a household id: --household / household=;
        a weight: --sample-weight / sample_weight=)."""
        from .columns import skipped_table

        prefix = "not protected, "
        return [
            f"left out of the quasi-identifiers (published unchanged), {line[len(prefix) :]}"
            for line in skipped_table(self.left_out)
        ]

    def _audit_lines_of(self, a) -> list[str]:
        """The published data's audit in words: k-anonymity of the key variables, re-identification
        risk, l-diversity, interval disclosure, the row order, and the audit's warnings (the
        summary's, the report's)."""
        risk = a.group("risk")
        if "key_records_below_k" not in risk:
            return []
        named = [str(c) for c in a.context.get("key_variables", ())]
        keys = (
            ", ".join(named)
            if len(named) <= 20
            else f"{', '.join(named[:18])}, ..., {named[-1]}: {len(named):,} columns"
        ) or "(none)"
        how = a.context.get("grouped_as")
        read = f", as {how} groups them" if how and how != "the published data as given" else ""
        if risk["key_records_below_k"] == 0:
            lines = [
                f"published file: {self.k}-anonymous on its key variables ({keys}){read}: the"
                f" rarest combination is shared by {risk['key_smallest_frequency']} records"
            ]
        else:
            lines = [
                f"published file: NOT {self.k}-anonymous on its key variables ({keys}){read}:"
                f" {risk['key_records_below_k']} records in {risk['key_combinations_below_k']}"
                f" combinations occur fewer than {self.k} times"
            ]
        if "households_smallest" in risk:
            lines.append(households_line(self.audit_roles, risk))
        if "reidentification_expected" in risk:
            lines.append(
                "re-identification risk on the categorical keys"
                f" ({', '.join(a.context.get('categorical_keys', ()))}): expected"
                f" {risk['reidentification_expected']:.4g} records, largest individual risk"
                f" {risk['reidentification_max']:.4g}, {risk['reidentification_above_threshold']}"
                " records above 0.1"
            )
        if "ldiversity_smallest_distinct" in risk:
            lines.append(
                "l-diversity of the sensitive columns: fewest distinct values in a combination"
                f" {risk['ldiversity_smallest_distinct']}, {risk['ldiversity_records_below_l']}"
                " records in combinations with fewer than 2"
            )
        lines.extend(closeness_lines(risk, a.context))
        if "interval_disclosure" in risk:
            lines.append(
                f"interval disclosure: rank {100 * risk['interval_disclosure']:.2f}%"
                + (
                    f", SDID {100 * risk['interval_sdid_share']:.2f}%"
                    if "interval_sdid_share" in risk
                    else ""
                )
                + (
                    f", RMDID1 {100 * risk['interval_rmd_risk1']:.2f}%"
                    if "interval_rmd_risk1" in risk
                    else ""
                )
                + f"; record linkage {100 * risk['record_linkage_dbrl']:.2f}%"
                + (
                    f", knowing the method {100 * risk['record_linkage_method_aware']:.2f}%"
                    if "record_linkage_method_aware" in risk
                    else ""
                )
            )
        lines.append(
            "row order: "
            + (
                "shuffled (a random permutation, written nowhere)"
                if self.shuffled or a.context.get("rows_aligned") is False
                else "the input's"
            )
        )
        lines += [
            f"warning: {w}" for w in a.warnings if not w.startswith("the published file is not")
        ]
        return lines

    def _facts_lines(self) -> list[str]:
        """Human-readable lines for the run's facts (portfolio, weights, representatives, merged
        strata)."""
        lines = []
        portfolios = self.portfolios()
        if len(portfolios) > 3:  # many strata: one line each
            for prefix, p in portfolios:
                ok = [r for r in p.rows if r.get("status") == "ok"]
                lines.append(f"{prefix}auto: winner {p.winner} of {len(ok)} member(s)")
        else:
            for prefix, p in portfolios:
                lines.extend(p.lines(prefix))
        if self.weights.variable is not None:
            lines.append(
                f"variable weights {self.weights.variable}; weighted information loss "
                f"{self._run_audit['weighted_information_loss']:.4f}%"
            )
        if self.weights.sample_weight is not None:
            lines.append(f"group means weighted by sample weight {self.weights.sample_weight}")
        if not self.publication.plain:
            lines.append(self.publication.note)
        lines.extend(privacy_lines(self.method_facts.get("privacy_models") or ()))
        for c, m in self._run_audit.categories.items():
            lines.append(
                f"categorical {c}: {100 * m['changed_share']:.2f}% of values changed, "
                f"distribution distance (TVD) {m['distribution_tvd']:.4f}"
            )
        if self.publication.distance != "euclidean":
            lines.append(
                f"distance {self.publication.distance}: the methods grouped the records on whitened"
                " continuous columns; IL is on z-scores"
            )
        if self.suppression is not None:
            lines.extend(suppression_lines(self.suppression))
        for m in self.strata.merges if self.strata is not None else ():
            lines.append(
                f"stratum {m['stratum']} ({m['size']} records < k) merged into {m['merged_into']}"
            )
        for m in self.strata.mapping if self.strata is not None else ():
            lines.append(
                f"stratum {m['stratum']}: "
                + (
                    f"published as {m['published_as']} (merged_strata='recode')"
                    if m["published_as"] is not None
                    else "stratum values suppressed (merged_strata='suppress')"
                )
            )
        return lines


def _get_audit(self) -> Audit:
    """The run's figures and, with ``audit``, the published data's (computed on first read)."""
    pending = self.__dict__.get("pending_audit")
    if pending is not None:
        self.__dict__["pending_audit"] = None
        self.__dict__["_original"] = pending.original  # Result.report's default original
        self.__dict__["_audit"] = self.__dict__["_audit"].with_figures(pending.compute())
    return self.__dict__["_audit"]


def _set_audit(self, value: Audit) -> None:
    self.__dict__["_audit"] = value


# ``audit`` stays a dataclass field (the constructor's and dataclasses.replace's keyword) read
# through a property, so that the file audit runs on first read (PendingAudit)
Result.audit = property(_get_audit, _set_audit)
