"""Units of directives: date-sharded groups as one table, twin tables (x, x_clean, x_v2) flagged together."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sophrosyne.base.words import split_identifier
from sophrosyne.schema.catalog import Catalog, Table

# Digit runs of four or more (years, dates) and a digit run ending the name vary between shards:
# `ga_sessions_20170801`, `gsod1929`, `2000_q1`, `icoads_core_1662_2000`, `activities_23`. Shorter runs
# elsewhere name different data (`..._HG19_..._R14` against `..._HG38_..._R14`, `_1yr` against `_5yr`) and stay.
_LONG_DIGITS = re.compile(r"\d{4,}")
_END_DIGITS = re.compile(r"\d+$")
# Affixes that mark a version of the same table rather than other data.
_TWIN_WORDS = frozenset(
    """clean cleaned cleansed raw staging stg stage backup bak old new tmp temp copy archive archived final
    latest current prev previous snapshot dedup deduped v""".split()  # noqa: SIM905
)
_VERSION = re.compile(r"^v\d+$")
MIN_SHARDS = 3  # fewer tables with a numbered name are more likely different tables (`team1`, `team2`)
MIN_OVERLAP = 0.5  # share of column names two shards or twins must have in common


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def shard_skeleton(name: str) -> str | None:
    """The name with its varying digits replaced by `#`, or None when it has no digits."""
    short = _short(name)
    if not any(ch.isdigit() for ch in short):
        return None
    skeleton = _END_DIGITS.sub("#", _LONG_DIGITS.sub("#", short))
    if "#" not in skeleton:
        return None
    prefix = name[: len(name) - len(short)]
    return prefix + skeleton


def twin_key(name: str) -> tuple[str, str] | None:
    """(the name without its version affix, the affix), or None when it has no such affix."""
    short = _short(name)
    words = split_identifier(short)
    if len(words) < 2:
        return None
    kept = [w for w in words if w not in _TWIN_WORDS and not _VERSION.match(w)]
    marks = [w for w in words if w not in kept]
    if not marks or not kept:
        return None
    # `v 2` splits into two words: a version number follows its `v`.
    if words[-2:-1] == ["v"] and words[-1].isdigit():
        kept = [w for w in words[:-2] if w not in _TWIN_WORDS]
        marks = ["v" + words[-1]]
    return name[: len(name) - len(short)] + "_".join(kept), "_".join(marks)


def _overlap(a: Table, b: Table) -> float:
    left, right = {c.name.lower() for c in a.columns}, {c.name.lower() for c in b.columns}
    if not left or not right:
        return 1.0
    return len(left & right) / len(left | right)


@dataclass
class Units:
    """How a catalog's tables fold into units: each shard group becomes its widest member (the
    representative); twins stay apart but are decided together."""

    catalog: Catalog  # one table per unit: the representatives and every ungrouped table
    members: dict[str, list[str]] = field(default_factory=dict)  # representative -> every table of its unit
    labels: dict[str, str] = field(default_factory=dict)  # representative -> how the unit is named (`x_*`)
    twins: list[list[str]] = field(default_factory=list)  # families of representatives that are versions
    marks: dict[str, str] = field(default_factory=dict)  # table of a family -> its version affix
    shard_keys: dict[str, set[str]] = field(default_factory=dict)  # representative -> its shards' varying digits

    def unit_of(self) -> dict[str, str]:
        """Every table -> the label of its unit (its own name when it is alone)."""
        return {m: self.labels.get(rep, rep) for rep, ms in self.members.items() for m in ms}

    def expand(self, tables: list[str]) -> list[str]:
        return [m for t in tables for m in self.members.get(t, [t])]


def fold_units(catalog: Catalog) -> Units:
    """Shard groups (same name skeleton, at least MIN_SHARDS tables, shared columns) and twin families."""
    skeletons: dict[str, list[Table]] = {}
    for table in catalog.tables.values():
        skeleton = shard_skeleton(table.name)
        if skeleton is not None:
            skeletons.setdefault(skeleton.lower(), []).append(table)
    members: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    keys: dict[str, set[str]] = {}
    grouped: set[str] = set()
    for tables in skeletons.values():
        if len(tables) < MIN_SHARDS:
            continue
        widest = max(tables, key=lambda t: (len(t.columns), t.name))
        family = [t for t in tables if _overlap(t, widest) >= MIN_OVERLAP]
        if len(family) < MIN_SHARDS:
            continue
        names = sorted(t.name for t in family)
        members[widest.name] = names
        original = shard_skeleton(widest.name) or widest.name
        labels[widest.name] = f"{original.replace('#', '*')} ({len(names)} tables)"
        grouped.update(names)
        keys[widest.name] = {k for n in names for k in varying_digits(n)}
    kept = {n: t for n, t in catalog.tables.items() if n not in grouped or n in members}
    for name in kept:
        members.setdefault(name, [name])
    families: dict[str, list[str]] = {}
    marks: dict[str, str] = {}
    for name in kept:
        key = twin_key(name)
        if key is not None:
            families.setdefault(key[0].lower(), []).append(name)
            marks[name] = key[1]
    twins: list[list[str]] = []
    lowered = {n.lower(): n for n in kept}
    for base, names in sorted(families.items()):
        plain = lowered.get(base)
        versions = sorted(names + ([plain] if plain else []))
        if len(versions) >= 2 and all(_overlap(kept[versions[0]], kept[n]) >= MIN_OVERLAP for n in versions[1:]):
            twins.append(versions)
            if plain:
                marks.setdefault(plain, "")
    reduced = catalog if len(kept) == len(catalog.tables) else Catalog(tables=kept, dialect=catalog.dialect)
    return Units(reduced, members, labels, twins, marks, keys)


def varying_digits(name: str) -> set[str]:
    """The digits that tell a shard from its siblings (`ga_sessions_20170801` -> 20170801, `CLINICAL_GDC_R39`
    -> 39), leading zeros dropped, each run and all runs together (`x_2017_02` -> 2017, 2, 201702)."""
    short = _short(name)
    runs = [m.group() for m in _LONG_DIGITS.finditer(short)]
    end = _END_DIGITS.search(short)
    if end and end.group() not in runs:
        runs.append(end.group())
    found = {r.lstrip("0") or "0" for r in runs}
    if len(runs) > 1:
        found.add("".join(runs).lstrip("0"))
    return found


_MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()  # noqa: SIM905
_MONTH_YEAR = re.compile(
    r"\b(" + "|".join(_MONTHS) + r")[a-z]*\.?\s+(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?(\d{4})\b", re.IGNORECASE
)


def question_numbers(text: str) -> set[str]:
    """Numbers a question writes (two digits or more, leading zeros dropped), and each month it names with
    its year as `yyyymm` (`April 2022` -> 202204), the forms date-sharded tables are named with."""
    found = {n.lstrip("0") for n in re.findall(r"\d{2,}", text)} - {""}
    for month, year in _MONTH_YEAR.findall(text):
        found.add(f"{year}{_MONTHS.index(month[:3].lower()) + 1:02d}")
    return found


def shards_named(numbers: frozenset[str] | set[str], units: Units) -> list[str]:
    """Representatives of the shard groups one of whose tables is named by one of the question's numbers (its
    year, month or release: `question_numbers`): the question picks that unit."""
    if not units.shard_keys:
        return []
    return sorted(rep for rep, keys in units.shard_keys.items() if keys & numbers)


def tie_twins(relevant: set[str], units: Units, text: str) -> set[str]:
    """Twins kept together: when one of a family is kept, all are, unless the text names the version
    (`clean`, `staging`, `v2`) that tells them apart."""
    if not units.twins:
        return relevant
    words = set(split_identifier(text))
    joined = " ".join(split_identifier(text))
    out = set(relevant)
    for family in units.twins:
        if not out & set(family):
            continue
        named = [t for t in family if units.marks.get(t) and _names_mark(units.marks[t], words, joined)]
        out |= set(named) if named else set(family)
    return out


def _names_mark(mark: str, words: set[str], joined: str) -> bool:
    parts = split_identifier(mark)
    return " ".join(parts) in joined if len(parts) > 1 else bool(parts) and parts[0] in words
