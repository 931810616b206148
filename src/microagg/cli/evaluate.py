"""``microagg evaluate ORIGINAL PROTECTED``: the audit of a published file, recomputed from the
two files (and the run manifest beside PROTECTED, which gives the roles, k and the figures that
pair records once the records are shuffled).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import InputError
from .common import (
    UserError,
    add_read_options,
    interval_p,
    print_json,
    progress_bar,
    read_options,
    stdout_to_stderr,
)


def declare(commands) -> None:
    """The evaluate command and its flags."""
    ev = commands.add_parser("evaluate", help="compare an original and a protected file")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument(
        "--columns", help="quasi-identifier columns (default: the numeric columns that changed)"
    )
    ev.add_argument(
        "-k",
        type=int,
        default=None,
        help="check k-anonymity of the published key variables (default 2)",
    )
    ev.add_argument("--categorical", metavar="A,B", help="nominal quasi-identifier columns")
    ev.add_argument("--ordinal", metavar="C,D", help="ordinal quasi-identifier columns")
    ev.add_argument(
        "--continuous",
        metavar="A,B",
        help="columns declared continuous (codes otherwise count as categories)",
    )
    ev.add_argument("--strata", metavar="A,B", help="stratum columns (key variables)")
    ev.add_argument("--keys", metavar="A,B", help="other published categorical key variables")
    ev.add_argument("--sensitive", metavar="A,B", help="sensitive columns (l-diversity)")
    ev.add_argument(
        "--sample-weight", metavar="COLUMN", help="sampling-weight column (re-identification risk)"
    )
    ev.add_argument(
        "--manifest",
        metavar="FILE",
        help=(
            "the run manifest protect wrote (default: "
            "PROTECTED.manifest.json when it exists): roles, k and the figures that pair records"
        ),
    )
    ev.add_argument("--no-manifest", action="store_true", help="ignore a manifest beside PROTECTED")
    ev.add_argument(
        "-p",
        "--interval-p",
        default=None,
        metavar="P",
        help="rank-interval percentage for interval disclosure (default 10)",
    )
    add_read_options(ev)
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.set_defaults(func=run)


def _warn_unaligned(orig, prot, qis) -> None:
    """evaluate compares records row by row: a column both files hold that is not a QI (an id, a
    category) and differs shows that the protected file's records are in another order."""
    import numpy as np
    import pandas as pd

    for c in orig.columns:
        if c in qis or c not in prot.columns:
            continue
        a, b = orig[c], prot[c]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            x, y = a.to_numpy(np.float64, na_value=np.nan), b.to_numpy(np.float64, na_value=np.nan)
            differ = (x != y) & ~(np.isnan(x) & np.isnan(y))
        else:
            differ = a.astype(str).to_numpy() != b.astype(str).to_numpy()
        if differ.any():
            warnings.warn(
                f"column {c} differs between the files ({int(differ.sum())} rows, first at row "
                f"{int(np.flatnonzero(differ)[0]) + 1}): the measures compare records row by row, "
                "so both "
                "files must hold the same records in the same order",
                UserWarning,
                stacklevel=2,
            )
            return


def _evaluate_roles(args, orig, prot, orig_table):
    """The audit's roles from evaluate's flags: the QI columns (default: the numeric columns the
    protection changed), their kinds (as protect takes them: codes are categories unless declared
    continuous), strata, keys, sensitive columns, the sampling weight and k (default 2)."""
    import numpy as np

    from ..columns import select_columns
    from ..declarations import column_names
    from ..embedding import column_kinds
    from ..measures import AuditRoles
    from ..publication import as_in_header

    def names(value, flag):
        return as_in_header(column_names(value, flag), orig_table.header) or []

    columns = names(args.columns, "--columns") or None
    categorical, ordinal = (
        names(args.categorical, "--categorical"),
        names(args.ordinal, "--ordinal"),
    )
    continuous = names(args.continuous, "--continuous")
    strata, keys = names(args.strata, "--strata"), names(args.keys, "--keys")
    sensitive = names(args.sensitive, "--sensitive")
    sw = as_in_header([args.sample_weight], orig_table.header)[0] if args.sample_weight else None
    apart = strata + keys + sensitive + ([sw] if sw else [])
    for c in apart + categorical + ordinal + continuous + (columns or []):
        orig_table.check_columns([c])
        if c not in orig.columns:
            raise UserError(f"unknown column: {c}")
        if c not in prot.columns:
            raise UserError(f"column {c} is missing from the protected file")
    if (
        columns is None
    ):  # default: the numeric columns the protection changed, and the declared categories
        numeric = select_columns(
            orig,
            None,
            apart + categorical + ordinal,
            allow_empty=bool(categorical + ordinal),
            continuous=continuous,
        )
        changed = [c for c in numeric if not np.array_equal(orig[c].to_numpy(), prot[c].to_numpy())]
        columns = [
            c for c in orig.columns if c in set(changed or numeric) | set(categorical + ordinal)
        ]
    kinds = column_kinds(orig, columns, categorical, ordinal, (), continuous)
    return AuditRoles(
        tuple(columns),
        kinds,
        args.k or 2,
        tuple(strata),
        tuple(keys),
        tuple(sensitive),
        sw,
        {c: None for c in ordinal},
        True,
        p=10.0,
    )


def _rows_aligned(orig, prot, qis) -> bool:
    """Do the files hold the same records in the same order? False when a column both hold that
    the protection does not touch holds the same values in another order (a shuffled output)."""
    import pandas as pd

    for c in orig.columns:
        if c in qis or c not in prot.columns or getattr(orig[c], "ndim", 1) != 1:
            continue
        a, b = (
            orig[c].astype(str).reset_index(drop=True),
            prot[c].astype(str).reset_index(drop=True),
        )
        if not a.equals(b) and pd.Series(sorted(a)).equals(pd.Series(sorted(b))):
            return False
    return True


def _evaluate_manifest(args, given_roles: list):
    """The run manifest to use: --manifest, else <PROTECTED>.manifest.json when it exists and no
    role is given on the command line (None with --no-manifest). Its files must be these: the
    SHA-256 of both are compared."""
    from .. import manifest

    if args.no_manifest:
        if args.manifest:
            raise UserError("--manifest and --no-manifest cannot be combined")
        return None
    path = Path(args.manifest) if args.manifest else manifest.path_for(args.protected)
    if not args.manifest and not path.is_file():
        return None
    if (
        not args.manifest and given_roles
    ):  # the roles asked for win over a manifest found beside the file
        warnings.warn(
            f"{path.name} is not used: the roles are given ({', '.join(given_roles)})",
            UserWarning,
            stacklevel=2,
        )
        return None
    doc = manifest.read(path)
    if given_roles:
        raise UserError(
            f"the roles come from the manifest: drop {', '.join(given_roles)} "
            "(or use --no-manifest)"
        )
    for which, given in (("input", args.original), ("output", args.protected)):
        if not Path(given).exists():
            raise UserError(f"input file not found: {given}")
        if manifest.sha256(given) != doc[which]["sha256"]:
            name = "ORIGINAL" if which == "input" else "PROTECTED"
            raise UserError(
                f"{name} ({Path(given).name}) is not the file the manifest {path.name} "
                "was written for "
                "(its SHA-256 differs); evaluate without it with --no-manifest"
            )
    if args.k is not None and args.k != doc["roles"]["k"]:
        raise UserError(
            f"-k {args.k} differs from the manifest's k ({doc['roles']['k']}): drop -k (or use "
            "--no-manifest)"
        )
    return doc


def run(args) -> int:
    """microagg evaluate: the roles (the manifest's, else the flags'), both files read, the
    published file audited as its reader reads it back; a manifest's figures are compared with the
    recomputed ones (a file the out-of-core mode published: in a stream, on the manifest's
    sample)."""
    from .. import io

    interval = interval_p(args)
    if args.k is not None and args.k < 1:
        raise UserError(f"-k must be at least 1, got {args.k}")
    given_roles = [
        f
        for f, v in (
            ("--columns", args.columns),
            ("--categorical", args.categorical),
            ("--ordinal", args.ordinal),
            ("--continuous", args.continuous),
            ("--strata", args.strata),
            ("--keys", args.keys),
            ("--sensitive", args.sensitive),
            ("--sample-weight", args.sample_weight),
        )
        if v is not None
    ]
    doc = _evaluate_manifest(args, given_roles)
    if doc is not None and (doc["audit"].get("context") or {}).get("sampled"):
        return _evaluate_streamed(args, doc, interval)
    orig_table, prot_table = _read_files(args, doc)
    orig, prot = orig_table.frame, io.published_view(prot_table)
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    roles, seed, aligned = _roles(args, doc, orig, prot, orig_table, interval)
    with stdout_to_stderr(), progress_bar(not args.quiet and not args.json, None, "evaluating"):
        audit = _audit(orig, prot, prot_table, roles, aligned, seed)
    recomputed = {(f.group, f.name) for f in audit.figures}
    if doc is not None:
        audit = _with_manifest_figures(audit, doc, interval)
    _print_evaluation(args, audit, roles, orig, doc, recomputed, aligned)
    return 0


def _read_files(args, doc):
    """Both files, read as the manifest says they were (else with the flags' read options)."""
    from .. import io

    options = read_options(args)
    if doc is None:
        return io.read(args.original, **options), io.read(args.protected, **options)
    read = {
        **{k: v for k, v in options.items() if v not in (None, ())},
        **doc["input"].get("read", {}),
    }
    return io.read(args.original, **read), io.read(args.protected, **doc["output"].get("read", {}))


def _roles(args, doc, orig, prot, orig_table, interval):
    """(the audit's roles, the seed, whether the records are in the original's order): the
    manifest's, else from the flags and the files; every role's column checked in the files."""
    import dataclasses

    from ..measures import AuditRoles

    if doc is not None:
        roles = AuditRoles.from_dict(doc["roles"])
        seed, aligned = doc["run"].get("seed", 0), not doc.get("shuffled", False)
    else:
        roles = _evaluate_roles(args, orig, prot, orig_table)
        seed = 0
        changed = tuple(roles.columns) + tuple(
            roles.keys
        )  # keys: local suppression may have set values missing
        _warn_unaligned(orig, prot, changed)
        aligned = _rows_aligned(orig, prot, changed)
    if interval is not None:
        roles = dataclasses.replace(roles, p=float(interval))
    missing = [c for c in roles.key_variables + list(roles.sensitive) if c not in prot.columns]
    if missing:
        raise UserError(
            f"column(s) missing from the protected file: {', '.join(map(str, missing))}"
        )
    if roles.sample_weight is not None and roles.sample_weight not in orig.columns:
        raise UserError(
            f"the sample weight column {roles.sample_weight} is missing from the original"
        )
    return roles, seed, aligned


def _audit(orig, prot, prot_table, roles, aligned, seed):
    """The published file's audit (``measures.audit_files``), its keys as its reader groups them."""
    from .. import io
    from ..measures import audit_files
    from ..measures.records import blank_as_missing

    grouped = io.key_view(prot_table, roles.key_variables)
    tokens = getattr(prot_table.meta, "missing", ()) or ()
    if tokens:  # a CSV's declared missing tokens (a missing QI value kept as read) are missing
        grouped = blank_as_missing(grouped, tokens)
    try:
        return audit_files(
            orig,
            prot,
            roles,
            grouped=grouped,
            aligned=aligned,
            seed=seed,
            read_back=io.reader_name(prot_table),
        )
    except InputError as exc:
        raise UserError(f"protected file: {exc}") from None


def _with_manifest_figures(audit, doc, interval):
    """The recomputed audit completed by the manifest's figures (those that pair records when
    the records are shuffled); a recomputed figure that differs from the manifest's is warned of."""
    import dataclasses

    from ..measures import Audit, in_registry_order

    written = Audit.from_dict(doc["audit"])
    if interval is not None:  # another p: the manifest's interval figures do not apply
        written = written.without("risk", "interval_disclosure", "interval_disclosure_p")
    held = {(g.group, g.name) for g in written.figures}
    differ = [
        f.name
        for f in audit.figures
        if f.name != "interval_disclosure_p"
        and (f.group, f.name) in held
        and written.rows(f.group)
        and _value_of(written, f) != f.value
    ]
    merged = written.with_figures(audit)
    merged = dataclasses.replace(
        merged,
        figures=in_registry_order(merged.figures),
        warnings=audit.warnings,
        context=audit.context,
    )
    if differ:
        warnings.warn(
            f"figure(s) {', '.join(differ)} recomputed from the files differ from the manifest's",
            UserWarning,
            stacklevel=2,
        )
    return merged


def _evaluate_streamed(args, doc, interval) -> int:
    """evaluate of a file the out-of-core mode published: its manifest's audit recomputed from the
    two files in a stream, on the same seeded sample (``publication.stream_audit``), the
    k-anonymity figures on every record; every figure must equal the manifest's."""
    import dataclasses

    from ..measures import Audit, AuditRoles
    from ..publication import stream_audit

    roles = AuditRoles.from_dict(doc["roles"])
    if interval is not None:
        roles = dataclasses.replace(roles, p=float(interval))
    sampled = doc["audit"]["context"]["sampled"]
    size = sampled.get("records") if isinstance(sampled, dict) else None
    if not isinstance(size, int) or size < 1:
        raise UserError(
            "the manifest's audit names no sample size: not a microagg out-of-core manifest"
        )
    with stdout_to_stderr():
        audit, _ = stream_audit(
            args.original, args.protected, roles, seed=doc["run"].get("seed", 0), sample=size
        )
    written = Audit.from_dict(doc["audit"])
    differ = [
        f.name
        for f in audit.figures
        if _value_of(written, f) != f.value
        and f.name != "interval_disclosure_p"
        and interval is None
    ]
    if differ:
        warnings.warn(
            f"figure(s) {', '.join(differ)} recomputed from the files differ from the manifest's",
            UserWarning,
            stacklevel=2,
        )
    _print_evaluation(
        args,
        audit,
        roles,
        range(sampled.get("of", 0)),
        doc,
        {(f.group, f.name) for f in audit.figures},
        True,
    )
    return 0


def _value_of(audit, figure):
    for f in audit.rows(figure.group):
        if f.name == figure.name:
            return f.value
    return None


def _print_evaluation(args, audit, roles, orig, doc, recomputed, aligned) -> None:
    risk = audit.group("risk")
    k = args.k if doc is None else roles.k
    anonymous = (
        None if k is None or "smallest_group" not in risk else bool(risk["smallest_group"] >= k)
    )
    from_manifest = sorted(
        f.name for f in audit.figures if f.group != "run" and (f.group, f.name) not in recomputed
    )
    if args.json:
        record = {
            "columns": [str(c) for c in roles.columns],
            "records": len(orig),
            "utility": audit.group("utility"),
            "risk": risk,
            "k": k,
            "k_anonymous": anonymous,
            "key_variables_k_anonymous": (
                None if "key_records_below_k" not in risk else risk["key_records_below_k"] == 0
            ),
            "categories": audit.categories,
            "warnings": list(audit.warnings),
            "context": audit.context,
            "rows_aligned": aligned,
            "from_manifest": from_manifest,
        }
        if doc is not None:
            record["run"] = audit.group("run")
            record["manifest"] = {
                "method": doc["run"]["method"],
                "shuffled": doc.get("shuffled", False),
            }
        print_json(record)
        return
    print(f"quasi-identifiers: {', '.join(map(str, roles.columns))}")
    if doc is not None:
        print(
            f"run (from the manifest): method {doc['run']['method']}, k = {roles.k}"
            + (", records shuffled" if doc.get("shuffled") else "")
        )
        for figure in audit.rows("run"):
            print(f"  {figure.measure.label + ':':45s} {figure.text()}")
    for title, group in (("utility / information loss", "utility"), ("disclosure risk", "risk")):
        print(title)
        for figure in audit.rows(group):
            if group == "utility" and figure.name == "smallest_group":
                continue  # listed once, with the risk figures
            note = ""
            if figure.name == "smallest_group" and k is not None:
                note = "  (k-anonymous)" if anonymous else f"  (NOT {k}-anonymous)"
            if figure.name in from_manifest:
                note += "  (from the manifest)"
            print(f"  {figure.measure.label + ':':45s} {figure.text()}{note}")
    if "key_records_below_k" in risk:
        keys = ", ".join(audit.context.get("key_variables", ()))
        print(
            f"key variables ({keys}): "
            + (
                f"{roles.k}-anonymous"
                if risk["key_records_below_k"] == 0
                else f"NOT {roles.k}-anonymous"
            )
        )
    if not aligned:
        print(
            "the records are not in the original's order: the measures that pair each record "
            "with its original "
            + ("come from the manifest" if doc is not None else "are left out")
            + "; the others are recomputed from the files"
        )
    for w in audit.warnings:
        print(f"warning: {w}")
