"""The summary's lines on the privacy models a run states (``Result.summary``, the report, the
app): the declared keys' model and their suppression, k-anonymity by households, t-closeness and
differential privacy."""

from __future__ import annotations

__all__ = ["KEY_MODELS", "suppression_lines", "households_line", "privacy_lines", "closeness_lines"]


#: the privacy model of the declared keys in words (``key_anonymity``)
KEY_MODELS = {
    "keys+qis": "k-anonymity on the keys with the QIs and strata (key_anonymity='keys+qis': the QI"
    " groups formed inside the key classes, a missing key matching any value)",
    "keys": "k-anonymity on the keys and strata alone, sdcMicro's semantics (key_anonymity='keys':"
    " the QIs microaggregated apart, k-anonymous as groups of their own)",
}


def suppression_lines(s) -> list[str]:
    """The local suppression in words (summary, report): the keys' privacy model, what was
    suppressed, the input's own missing key values apart."""
    model = getattr(s, "key_anonymity", None)
    lines = [f"keys: {KEY_MODELS[model]}"] if model in KEY_MODELS else []
    gaps = getattr(s, "missing_before", 0)
    if gaps:
        lines.append(
            f"keys: {gaps} values missing in the input (blank, NA or a declared token), published"
            " missing and not counted as suppressed"
        )
    return lines + _suppressed_lines(s)


def _suppressed_lines(s) -> list[str]:
    keys = ", ".join(map(str, s.keys))
    if s.mode == "report":
        return (
            []
            if not s.records_left_below_k
            else [
                f"keys ({keys}): {s.records_left_below_k} records below k = {s.k}, published"
                " unchanged (on_keys_below_k='report')"
            ]
        )
    if not s.total:
        return [f"keys ({keys}): every record matches at least {s.k} records; nothing suppressed"]
    per_key = ", ".join(f"{c} {n}" for c, n in s.per_key.items())
    return [
        f"local suppression on the keys ({keys}), importance {', '.join(map(str, s.importance))}:"
        f" {s.total} values set missing in {s.records} records ({per_key}) for"
        f" {s.records_below_k_before} records below k = {s.k}"
    ]


def households_line(roles, risk: dict) -> str:
    """The privacy model by households in words: k-anonymous by households (or NOT), the fewest
    households sharing a combination, the household-level QIs and the household risk."""
    from .measures.risk.household_risk import privacy_model

    below, model = risk["households_records_below_k"], privacy_model(roles.k, roles.household)
    line = (
        f"published file: {model}: every published combination comes from at least "
        f"{risk['households_smallest']} households"
        if not below
        else f"published file: NOT {model}: {below} records publish a combination "
        f"of fewer than {roles.k} households"
    )
    if roles.household_level:
        line += "; household-level quasi-identifiers, one value per household: " + ", ".join(
            map(str, roles.household_level)
        )
    if "household_risk_expected" in risk:
        line += (
            f"; household risk (sdcMicro hier_risk): expected {risk['household_risk_expected']:.4g}"
            f" re-identifications ({risk['household_risk_percent']:.4g}%)"
        )
    return line


def privacy_lines(models) -> list[str]:
    """What each declared privacy model guarantees, and what it does not (``microagg.privacy``)."""
    lines = []
    for m in models:
        if m.get("model") == "t-closeness":
            lines.append(
                f"privacy model: {m['holds']} (algorithm {m.get('algorithm')}; largest EMD "
                + ", ".join(f"{c} {e:.4g}" for c, e in m["largest_emd"].items())
                + "); verified on the file as read back"
            )
        else:
            scales = ", ".join(f"{c} {s:.4g}" for c, s in m["laplace_scale"].items())
            lines.append(
                f"privacy model: {m['holds']}; mechanism {m['mechanism']}"
                + (" (its groups replace the method's)" if m["mechanism"] == "insensitive" else "")
                + f", Laplace scale {scales}"
            )
            lines.append(f"not covered: {m['does_not_hold']}")
    return lines


def closeness_lines(risk: dict, context: dict) -> list[str]:
    """The audit's t-closeness line: the largest EMD of a combination per sensitive column."""
    if "tcloseness_largest_emd" not in risk:
        return []
    per = context.get("tcloseness_emd") or {}
    shown = ", ".join(f"{c} {e:.4g}" for c, e in per.items())
    return [
        "t-closeness of the sensitive columns: largest EMD of a combination to the file "
        + (shown or f"{risk['tcloseness_largest_emd']:.4g}")
    ]
