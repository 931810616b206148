"""The roles of a published file's columns that its audit needs (``AuditRoles``): written to a
run's manifest and read back from one as an untrusted document."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..errors import InputError
from .risk.household_risk import households_doc

__all__ = ["AuditRoles", "DEFAULT_L"]

#: the l of l-diversity checked by default (sdcMicro's ldiversity reports l; 2 is the least
#: diversity)
DEFAULT_L = 2.0


@dataclass(frozen=True)
class AuditRoles:
    """The roles of a file's columns that the audit needs: the QIs and their kinds, the strata,
    other published categorical keys, sensitive columns, the sampling-weight column, k, the
    declared ordinal levels and whether IL is on z-scores. ``key_variables`` = QIs + strata +
    keys: what a reader can match on."""

    columns: tuple
    kinds: dict
    k: int
    strata: tuple = ()
    keys: tuple = ()
    sensitive: tuple = ()
    sample_weight: str | None = None
    ordinal_levels: dict = field(default_factory=dict)
    standardize: bool = True
    l: float = DEFAULT_L  # noqa: E741 (the l of l-diversity)
    p: float = 10.0
    household: tuple = ()  # household id column(s): k-anonymity counted by households
    household_level: tuple = ()  # QIs published once per household
    missing: tuple = ()  # text tokens that mean missing (run option missing): in keys, a wildcard

    @property
    def key_variables(self) -> list:
        return list(dict.fromkeys([*self.columns, *self.strata, *self.keys]))

    @cached_property
    def continuous(self) -> list:  # computed once: a wide file's audit asks for it per column
        return [c for c in self.columns if self.kinds.get(c, "continuous") == "continuous"]

    @property
    def categorical_keys(self) -> list:
        """The key variables whose published values are categories (the individual risk's keys)."""
        continuous = set(self.continuous)
        return list(
            dict.fromkeys(
                [*self.strata, *(c for c in self.columns if c not in continuous), *self.keys]
            )
        )

    def to_dict(self) -> dict:
        return {
            "columns": [str(c) for c in self.columns],
            "kinds": {str(c): v for c, v in self.kinds.items()},
            "k": int(self.k),
            "strata": [str(c) for c in self.strata],
            "keys": [str(c) for c in self.keys],
            "sensitive": [str(c) for c in self.sensitive],
            "sample_weight": self.sample_weight,
            "ordinal_levels": {
                str(c): None if v is None else list(v) for c, v in self.ordinal_levels.items()
            },
            "standardize": bool(self.standardize),
            "l": float(self.l),
            "p": float(self.p),
            "missing": [str(t) for t in self.missing],
            **(
                {}
                if not self.household
                else households_doc(self.k, self.household, self.household_level)
            ),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> AuditRoles:
        """The roles ``to_dict`` wrote (a manifest's, read as untrusted: roles that contradict each
        other are one InputError)."""
        roles = cls(
            tuple(doc["columns"]),
            dict(doc["kinds"]),
            int(doc["k"]),
            tuple(doc.get("strata") or ()),
            tuple(doc.get("keys") or ()),
            tuple(doc.get("sensitive") or ()),
            doc.get("sample_weight"),
            dict(doc.get("ordinal_levels") or {}),
            bool(doc.get("standardize", True)),
            float(doc.get("l", DEFAULT_L)),
            float(doc.get("p", 10.0)),
            tuple(doc.get("household") or ()),
            tuple(doc.get("household_level") or ()),
            tuple(str(t) for t in doc.get("missing") or ()),
        )
        both = sorted(set(map(str, roles.sensitive)) & set(map(str, roles.key_variables)))
        if both:
            raise InputError(
                f"the roles name {', '.join(both)} both sensitive and a key variable: "
                "not microagg's"
            )
        if len(set(roles.columns)) != len(roles.columns):
            raise InputError("the roles name a quasi-identifier twice: not microagg's")
        if roles.sample_weight is not None and roles.sample_weight in roles.key_variables:
            raise InputError(
                f"the roles name the sample weight {roles.sample_weight} a key variable: "
                "not microagg's"
            )
        return roles
