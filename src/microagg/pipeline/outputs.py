"""The stages after the method: ``publish_values`` (what each record publishes, and the nature
of the published values) and ``measure`` (the run's audit, read from what was published)."""

from __future__ import annotations

import numpy as np

from ..labels import sse
from ..options import Run
from .audit_and_order import frame_of
from .parts import GROUP_MEANS, Grouped, Prepared, Published, PublishedValues, Roles, Source

# --- publish -------------------------------------------------------------------------------------


def publish_values(
    source: Source, roles: Roles, prepared: Prepared, grouped: Grouped, run: Run
) -> Published:
    """What each record publishes (``representatives.published_representatives``: the
    aggregation of continuous columns, the median category of ordinal ones, the mode of nominal
    ones), in the input's kind and shape: only the QI columns change; categorical ones keep their
    dtype."""
    from ..representatives import published_representatives

    emb = prepared.embedding
    numeric, codes = published_representatives(
        emb, grouped.labels, run.aggregation, _aggregation_arguments(run), roles.sample_weights
    )
    built = _published_values(emb, run, roles.sample_weights is not None)
    if grouped.households is not None and grouped.households.households.level:
        numeric, codes, built = _household_level(emb, numeric, codes, grouped.households, built)
    if grouped.values is not None:  # fixed by a "grouped" stage (differential privacy)
        numeric, built = _fixed_values(emb, numeric, grouped.values)
    numeric, nature = _option_stages(emb, numeric, built, run)
    staged = nature if nature != built or grouped.values is not None else None
    df = source.frame
    strata = grouped.stratum_codes
    recoded = (
        strata.published_columns(df, roles.strata, run.merged_strata) if strata is not None else {}
    )
    changed = list(roles.columns) + list(recoded)
    if source.kind == "array":
        out = df.to_numpy(dtype=np.float64, copy=True)
        for c in roles.columns:
            out[:, df.columns.get_loc(c)] = np.asarray(
                emb.published_column(c, numeric, codes), dtype=np.float64
            )
        for c, values in recoded.items():
            out[:, df.columns.get_loc(c)] = np.asarray(values, dtype=np.float64)
        suppression = _suppress_keys(frame_of(out, df.columns), roles, run, grouped.key_classes)
        if suppression is not None:
            for j, c in enumerate(suppression.keys):
                out[suppression.suppressed[:, j], df.columns.get_loc(c)] = np.nan
        return Published(
            numeric,
            codes,
            out.reshape(source.shape),
            changed + _suppressed_columns(suppression),
            suppression,
            nature,
            staged,
        )
    from ..io.typed_frames import with_columns

    published = {  # (a continuous column's published values need not its original Series)
        c: emb.published_column(c, numeric, codes, None if emb.kinds[c] == "continuous" else df[c])
        for c in roles.columns
    }
    out = with_columns(df, published | recoded)
    suppression = _suppress_keys(out, roles, run, grouped.key_classes)
    if suppression is not None and suppression.total:
        from ..suppression import apply

        out = apply(out, suppression)
    changed = changed + _suppressed_columns(suppression)
    if source.kind == "native":  # the caller's frame, only the changed columns replaced
        from ..frames import give_back

        return Published(
            numeric,
            codes,
            give_back(source.native, out, changed),
            changed,
            suppression,
            nature,
            staged,
        )
    return Published(numeric, codes, out, changed, suppression, nature, staged)


def _household_level(emb, numeric: np.ndarray, codes: np.ndarray, grouping, nature: str):
    """Household-level QIs publish, over one record per household of their household group, its
    mean (continuous) or its most frequent category (``households.household_level_values``), every
    member its household's."""
    from ..households import household_level_values

    level = grouping.households.level
    categorical = [c for c in level if c in emb.categorical_columns]
    original = {
        c: (
            emb.codes[:, emb.categorical_columns.index(c)]
            if c in categorical
            else emb.numeric[:, emb.numeric_columns.index(c)]
        )
        for c in level
    }
    values = household_level_values(grouping, original, categorical)
    numeric, codes = numeric.copy(), codes.copy()
    for c in level:
        if c in categorical:
            codes[:, emb.categorical_columns.index(c)] = values[c].astype(np.int64)
        if c in emb.numeric_columns:  # continuous, or an ordinal's rank (its category's index)
            numeric[:, emb.numeric_columns.index(c)] = values[c]
    weighted = " (weighted by household)" if grouping.households.weights is not None else ""
    return (
        numeric,
        codes,
        (
            f"{nature}; household-level QIs: household groups' means or most frequent categories, "
            f"one record per household{weighted}"
        ),
    )


def _option_stages(emb, numeric: np.ndarray, nature: str, run: Run) -> tuple[np.ndarray, str]:
    """The run options' own stages at the "published" point (``Param.stage``), in the table's
    order, each where the run gives its option a value other than the default: it gets the
    continuous QIs' published values and their nature and returns them changed."""
    from ..options import RUN_OPTIONS

    staged = [p for p in RUN_OPTIONS if p.stage is not None and p.acts_on == "published"]
    given = run.options
    position = {c: i for i, c in enumerate(emb.numeric_columns)}  # (a wide file: no list.index)
    index = {c: position[c] for c in emb.continuous_columns}
    for p in staged:
        value = given[p.name]
        if value is p.default or (isinstance(value, (int, float, str)) and value == p.default):
            continue
        values = p.stage(
            PublishedValues({c: numeric[:, j].copy() for c, j in index.items()}, nature), value
        )
        numeric = numeric.copy()
        for c, column in values.continuous.items():
            numeric[:, index[c]] = np.asarray(column, dtype=np.float64)
        nature = values.nature
    return numeric, nature


def _fixed_values(emb, numeric: np.ndarray, values) -> tuple[np.ndarray, str]:
    """The continuous QIs' values a "grouped" stage fixed (``Grouped.values``)."""
    numeric = numeric.copy()
    for c, column in values.continuous.items():
        numeric[:, emb.numeric_columns.index(c)] = np.asarray(column, dtype=np.float64)
    return numeric, values.nature


def _suppress_keys(frame, roles: Roles, run: Run, classes=None):
    """The published file's last stage: local suppression of the declared keys (``suppression``),
    or, by ``on_keys_below_k``, a refusal or a report. key_anonymity="keys+qis": the published
    QIs and strata fixed, so that the whole file is k-anonymous on every key variable, on top of
    the keys-alone plan the key classes were formed after (``classes.plan``; both counted, the
    input's missing values apart); "keys" (sdcMicro's semantics): the strata fixed only."""
    if not roles.keys:
        return None
    from dataclasses import replace

    from ..suppression import apply, for_run

    keys_alone = run.key_anonymity == "keys"
    fixed = list(roles.strata) if keys_alone else list(roles.columns) + list(roles.strata)
    first = None if classes is None else classes.plan
    if first is not None and first.total:
        frame = apply(frame, first)
    found = for_run(
        frame,
        list(roles.keys),
        roles.k,
        run.on_keys_below_k,
        run.key_importance if first is None else list(first.importance),  # one order for both
        fixed,
        run.missing or (),
    )
    planned = (
        replace(found, key_anonymity=run.key_anonymity)
        if first is None
        else replace(
            found,
            suppressed=found.suppressed | first.suppressed,
            records_below_k_before=first.records_below_k_before,
            greedy=found.greedy + first.greedy,
            missing_before=first.missing_before,
            key_anonymity=run.key_anonymity,
        )
    )
    if roles.households is not None and planned.mode == "suppress":  # k households, not records
        from ..households import suppress_below_k

        planned = suppress_below_k(
            frame, planned, fixed, roles.households.codes, roles.k, run.missing or ()
        )
    return planned


def _suppressed_columns(suppression) -> list:
    """The key columns in which values were suppressed: they are published anew."""
    if suppression is None:
        return []
    return [c for c, count in suppression.per_key.items() if count]


def _aggregation_arguments(run: Run) -> dict:
    """The values of the chosen aggregation's parameters (its own, given in aggregation_params or
    by a run option of the same name; defaults where not given)."""
    from ..representatives import aggregation_arguments

    return aggregation_arguments(run.aggregation, run.options)


def _representatives_in_words(emb, run: Run) -> list[str]:
    """What a group publishes, per kind of QI ("median (continuous)", "mode (nominal)", ...)."""
    from ..representatives import AGGREGATIONS

    described = AGGREGATIONS[run.aggregation].describe(_aggregation_arguments(run))
    parts = [f"{described} (continuous)"] if emb.continuous_columns else []
    if any(kind == "ordinal" for kind in emb.kinds.values()):
        parts.append("median category (ordinal)")
    if any(kind == "nominal" for kind in emb.kinds.values()):
        parts.append("mode (nominal)")
    return parts


def _published_values(emb, run: Run, weighted: bool) -> str:
    """The nature of the published QI values (``Published.values``)."""
    from ..representatives import AGGREGATIONS

    if AGGREGATIONS[run.aggregation].group_means and not weighted and not emb.heterogeneous:
        return GROUP_MEANS
    return ", ".join(_representatives_in_words(emb, run)) + (" (weighted)" if weighted else "")


# --- measure -------------------------------------------------------------------------------------


def measure(
    source: Source,
    roles: Roles,
    prepared: Prepared,
    grouped: Grouped,
    published: Published,
    run: Run,
):
    """The run's audit (the "run" measures of ``measures``: IL, SSE, SST, the bound converted to
    the SSE of Z and the gap, weighted IL, group sizes; the categorical QIs' changes), and what the
    run published (``result.Publication``) and proved (``result.Bound``)."""
    import pandas as pd

    from ..measures import RunInputs, audit, categorical_report
    from ..result import Bound

    emb, labels = prepared.embedding, grouped.labels
    Zp = emb.embed(published.numeric, published.codes)
    means = published.values == GROUP_MEANS
    inputs = RunInputs(
        prepared.Z,
        Zp,
        labels,
        means,
        grouped.lower_bound,
        prepared.bound_factor,
        prepared.weights,
        prepared.matrix,
    )
    result = audit(inputs, "run")
    if emb.heterogeneous:  # per categorical column: share of changed values, distribution distance
        df = source.frame
        result = type(result)(
            result.figures,
            categorical_report(
                df[emb.categorical_columns],
                pd.DataFrame(
                    {
                        c: emb.published_column(c, published.numeric, published.codes, df[c])
                        for c in emb.categorical_columns
                    },
                    index=df.index,
                ),
            ),
        )
    return (
        result,
        _publication(emb, prepared.Z, labels, run, inputs.sse, published.staged),
        Bound(inputs.whitened_bound, inputs.weighted_bound),
    )


def _publication(emb, Z, labels, run: Run, total_sse: float, staged: str | None):
    """What was published: the aggregation and its parameters, the kinds, the SSE to the group
    means (group means, weighted or not, of continuous QIs only: nothing to say); ``staged``: the
    published values' nature when a run option's own stage changed them (said in the note)."""
    from ..representatives import AGGREGATIONS
    from ..result import Publication

    kinds = {str(c): emb.kinds[c] for c in emb.columns}
    if AGGREGATIONS[run.aggregation].group_means and not emb.heterogeneous and not staged:
        return Publication(run.aggregation, {}, run.distance, kinds)
    to_means = sse(Z, labels) if labels.ndim == 1 else None
    parts = staged or ", ".join(_representatives_in_words(emb, run))
    note = f"representatives: {parts}; IL is measured to the published values"
    if to_means is not None:
        note += f" (SSE {total_sse:.6g}; to the group means it would be {to_means:.6g})"
    return Publication(
        run.aggregation, _aggregation_arguments(run), run.distance, kinds, to_means, note
    )
