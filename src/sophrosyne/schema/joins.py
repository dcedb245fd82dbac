"""Join candidates where keys are missing, from names and types (checked by values in `schema/join_checks.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from sophrosyne.base.names import ENGLISH_WORDS
from sophrosyne.base.words import split_identifier, stem
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

# The last word of a column that makes it a key: `customer_id`, `CustomerKey`, `dept_no`, `state_cd`, `Sku`.
KEY_WORDS = frozenset({"id", "key", "code", "cd", "no", "num", "nbr", "number", "sk", "uuid", "guid", "sku"})
# Same-named columns join only when the name says more than a bare key word or a common attribute.
_GENERIC = frozenset({"id", "key", "code", "no", "num", "number", "type", "status", "name"})
_SURROGATE = frozenset({"key", "sk"})  # the words a warehouse ends its keys with
_PREFIXES = frozenset({"dim", "fact", "fct", "tbl", "ref", "lkp", "lu", "stg", "raw", "src", "d", "f", "t"})
MAX_SHARED_HOLDERS = 8  # a key name held by more tables than this is too common to join them all pairwise
# A column that names more equally likely tables than this, none of them in its own schema or domain, names
# none for sure: `asset_id` beside 30 `<domain>_asset` tables is no join (see `_unambiguous`).
MAX_TIED_TARGETS = 3


@dataclass(frozen=True)
class InferredJoin:
    """A join the schema does not declare: `table.columns` -> `ref_table.ref_columns`, how sure, and why."""

    table: str
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]
    confidence: float
    evidence: str  # what supports it: the names, or the values found

    def as_foreign_key(self) -> ForeignKey:
        return ForeignKey(
            list(self.columns), self.ref_table, list(self.ref_columns), inferred=True, confidence=self.confidence
        )


@lru_cache(maxsize=4096)
def type_family(type_name: str) -> str:
    """The family of a column type for joining: int, text, number, time, bool, other ("" when untyped).
    Kept per type name: a catalog has few, and candidate joins ask 100,000s of times at 5,000 tables."""
    upper = (type_name or "").upper()
    if not upper:
        return ""
    if any(t in upper for t in ("INT", "NUMBER(38,0)", "SERIAL")):
        return "int"
    if any(t in upper for t in ("CHAR", "TEXT", "STRING", "CLOB", "VARCHAR")):
        return "text"
    if any(t in upper for t in ("DEC", "NUMERIC", "NUMBER", "FLOAT", "DOUBLE", "REAL", "BIGNUMERIC")):
        return "number"
    if any(t in upper for t in ("DATE", "TIME")):
        return "time"
    if "BOOL" in upper:
        return "bool"
    return "other"


def compatible(a: Column, b: Column) -> float:
    """How well two columns' types fit a join: 1 alike, 0.85 a number against a text key, 0 not at all."""
    fa, fb = type_family(a.type), type_family(b.type)
    if not fa or not fb or fa == fb or {fa, fb} == {"int", "number"}:
        return 1.0
    if "text" in (fa, fb) and {fa, fb} <= {"int", "number", "text"}:
        return 0.85  # warehouses (and SQLite schemas) often keep numeric ids as strings
    return 0.0


def _short(table: str) -> str:
    return table.rsplit(".", 1)[-1]


def table_entities(table: str) -> set[str]:
    """What a table is named after: its words stemmed, and the same without warehouse prefixes
    (`SALES_CUSTOMERS` -> `sale customer`, `customer`; `dim_customer` -> `customer`)."""
    words = [stem(w) for w in split_identifier(_short(table)) if not w.isdigit()]
    entities = {" ".join(words[i:]) for i in range(len(words))}
    while words and words[0] in _PREFIXES:
        words = words[1:]
    if words:
        entities.add(" ".join(words))
    return {e for e in entities if e}


def column_entity(column: str) -> str | None:
    """The entity a key-like column names (`customer_id` -> `customer`), or None when it is no such column."""
    words = split_identifier(column.rsplit(".", 1)[-1])
    if len(words) >= 2 and words[-1] in KEY_WORDS:
        return " ".join(stem(w) for w in words[:-1] if not w.isdigit()) or None
    return None


def _is_struct_field(table: Table, column: Column) -> bool:
    parent = column.name.rsplit(".", 1)[0] if "." in column.name else ""
    return bool(parent) and table.column(parent) is not None


def _declared(catalog: Catalog) -> tuple[set[tuple[str, str]], set[frozenset[str]]]:
    """Columns of the tables that declare foreign keys (such a table is trusted to declare all its joins),
    and pairs of tables a declared key joins."""
    columns: set[tuple[str, str]] = set()
    pairs: set[frozenset[str]] = set()
    for t in catalog.tables.values():
        declared = [fk for fk in t.foreign_keys if not fk.inferred]
        if declared:
            columns |= {(t.name, c.name.lower()) for c in t.columns}
        for fk in declared:
            pairs.add(frozenset((t.name, fk.ref_table)))
    return columns, pairs


def candidate_joins(catalog: Catalog) -> list[InferredJoin]:
    """Joins named by the schema: `x_id` to the table named `x`/`xs` (its `id` or `x_id`), and key-like
    columns of the same name and compatible type in a few tables. Declared keys win over both."""
    declared_columns, declared_pairs = _declared(catalog)
    by_entity: dict[str, list[Table]] = {}
    entities: dict[str, set[str]] = {}
    holders: dict[str, list[tuple[Table, Column]]] = {}
    # Each table's columns by their stemmed words, and the tables holding each such name: lookups, so that
    # inference stays linear in the columns (a 5,000-table catalog has 100,000).
    keyed: dict[str, dict[tuple[str, ...], Column]] = {}
    by_words: dict[tuple[str, ...], list[Table]] = {}
    # Views are left out on both sides: a view is derived from tables it already joins (its definition).
    words_of: dict[str, set[str]] = {}
    leading: dict[str, list[str]] = {}
    compounds: dict[str, list[Table]] = {}
    for t in (t for t in catalog.tables.values() if t.kind != "view"):
        entities[t.name] = table_entities(t.name)
        words_of[t.name] = {stem(w) for w in split_identifier(_short(t.name))}
        if t.columns:
            leading[t.name] = [stem(w) for w in split_identifier(t.columns[0].name)]
        plain = [w for w in split_identifier(_short(t.name)) if w not in _PREFIXES and not w.isdigit()]
        if len(plain) == 1 and len(plain[0]) >= 7:
            whole = stem(plain[0])
            for cut in range(2, len(whole) - 3):
                compounds.setdefault(whole[cut:], []).append(t)
        for entity in entities[t.name]:
            by_entity.setdefault(entity, []).append(t)
        keyed[t.name] = {}
        for c in t.columns:
            if not _is_struct_field(t, c):
                holders.setdefault(c.name.lower(), []).append((t, c))
                spelled = tuple(stem(w) for w in split_identifier(c.name))
                if spelled not in keyed[t.name]:
                    keyed[t.name][spelled] = c
                    by_words.setdefault(spelled, []).append(t)
    found: dict[tuple[str, str, str], InferredJoin] = {}

    def add(join: InferredJoin) -> None:
        if frozenset((join.table, join.ref_table)) in declared_pairs:
            return
        key = (join.table, join.columns[0].lower(), join.ref_table)
        if key not in found or found[key].confidence < join.confidence:
            found[key] = join

    for name, every in holders.items():
        # A table that declares its keys declares all its joins: its columns are never a guess's source (and
        # leaving them out first keeps a key held by thousands of declaring tables from costing thousands of
        # owners each).
        held = [(t, c) for t, c in every if (t.name, name) not in declared_columns]
        if not held:
            continue
        words = [stem(w) for w in split_identifier(every[0][1].name.rsplit(".", 1)[-1])]
        if len(words) >= 2 and words[-1] not in KEY_WORDS:
            _named_after(words, name, held, by_entity, keyed, declared_columns, add)
            continue
        if len(words) < 2:
            _named_whole(words, name, held, by_entity, declared_columns, add)
            continue
        # `OwnerUserId` -> users.Id and `home_team_api_id` -> team.team_api_id: a role word may lead the name,
        # so every tail that still ends in the key word is tried, the whole name first.
        holder_names = {t.name for t, _ in every}
        tails = [(start, words[start:]) for start in range(len(words) - 1)]
        if len(words) >= 3 and words[-1] in _SURROGATE and words[-2] in KEY_WORDS:
            # A warehouse's key word after a key word says nothing more: `SET_CODE_KEY` is also `SET_CODE`.
            tails += [(start, words[start:-1]) for start in range(len(words) - 2)]
        for start, tail in tails:
            entity = " ".join(w for w in tail[:-1] if not w.isdigit())
            named = by_entity.get(entity, [])
            named_set = {t.name for t in named}
            owners = named + [t for t in by_words.get(tuple(tail), []) if len(tail) > 2 and tail[0] in entities[t.name]]
            # Only the tables holding the column itself are named after its entity (`hero_power.power_id`).
            elsewhere = [t for t in named if t.name not in holder_names]
            if not elsewhere and start > 0 and len(tail) == 2:
                # `start_station_id` -> bikeshare_station_info.station_id: no table is named `station`, but one
                # whose name has the word leads with that very column, its key.
                owners += [
                    t for t in by_words.get(tuple(tail), []) if tail[0] in words_of[t.name] and leading[t.name] == tail
                ]
            if not elsewhere and start == 0 and " " not in entity and len(entity) >= 4:
                # `hero_id` -> superhero.id, `power_id` -> superpower.id: the entity ends a one-word table name.
                compound = compounds.get(entity, [])
                owners += compound if len(compound) == 1 else []
                named_set |= {t.name for t in compound}
            matched = False
            for owner in owners:
                target = keyed[owner.name].get(tuple(tail)) or (
                    _key_column(keyed[owner.name], tail[-1]) if owner.name in named_set else None
                )
                if target is None:
                    continue
                for t, c in held:
                    if t.name == owner.name or (t.name, name) in declared_columns:
                        continue
                    fit = compatible(c, target)
                    if fit:
                        matched = True
                        first = owner.columns[0].name.lower() == target.name.lower() or target.primary_key
                        confidence = (0.85 if first else 0.75) * fit * (1.0 if start == 0 else 0.9)
                        add(InferredJoin(t.name, (c.name,), owner.name, (target.name,), round(confidence, 3), "names"))
            if matched:
                break
    owned = {(j.table, j.columns[0].lower()) for j in found.values()} | {
        (j.ref_table, j.ref_columns[0].lower()) for j in found.values()
    }
    found = {(j.table, j.columns[0].lower(), j.ref_table): j for j in _unambiguous(list(found.values()))}
    for name, held in holders.items():
        words = split_identifier(held[0][1].name)
        if len(held) < 2 or len(held) > MAX_SHARED_HOLDERS or name in _GENERIC:
            continue
        compact = len(words) < 2 and name not in ("uuid", "guid") and _compact_key(name)
        if len(words) < 2 and name not in ("uuid", "guid") and not compact:  # one word keys: see _compact_key
            continue
        if (words[-1] not in KEY_WORDS and not compact) or any((t.name, name) in owned for t, _ in held):
            continue
        free = [(t, c) for t, c in held if (t.name, name) not in declared_columns]
        if compact:
            # ... joined only to the one table it leads (its key there): `participates_in.actid` -> activity.
            leads = [(t, c) for t, c in free if t.columns[0] is c]
            if len(leads) != 1:
                continue
            owner, key = leads[0]
            for t, c in free:
                fit = compatible(c, key)
                if fit and t.name != owner.name:
                    add(InferredJoin(t.name, (c.name,), owner.name, (key.name,), 0.6 * fit, "shared name"))
            continue
        # A table that declares its keys joins only through them: it is neither side of a shared-name guess.
        for i, (t, c) in enumerate(free):
            for other, oc in free[i + 1 :]:
                fit = compatible(c, oc)
                if fit and t.name != other.name:
                    add(InferredJoin(t.name, (c.name,), other.name, (oc.name,), 0.6 * fit, "shared name"))
    return sorted(found.values(), key=lambda j: (-j.confidence, j.table, j.columns, j.ref_table))


def _named_whole(
    words: list[str],
    name: str,
    held: list[tuple[Table, Column]],
    by_entity: dict[str, list[Table]],
    declared_columns: set[tuple[str, str]],
    add: Callable[[InferredJoin], None],
) -> None:
    """A column named as another table is (`assigned_to.scientist` -> scientists, by its first column, its key),
    where one table only is so named, the name is no common attribute (`name`, `type`, `status`) and the
    types are alike."""
    owners = by_entity.get(words[0], []) if words and name not in _GENERIC else []
    if len(owners) != 1 or not owners[0].columns:
        return
    owner = owners[0]
    key = owner.columns[0]
    for t, c in held:
        if t.name == owner.name or (t.name, name) in declared_columns:
            continue
        if compatible(c, key) == 1.0:  # types alike: a `comment` text is no key of `comments`
            add(InferredJoin(t.name, (c.name,), owner.name, (key.name,), 0.6, "names"))


def _compact_key(name: str) -> bool:
    """A one-word name of 3 to 5 letters that runs a word and `id` or `no` together (`actid`, `stuid`, `dno`,
    `cid`) and is no English word (`paid`, `valid`, `piano` are not keys)."""
    return name.isalpha() and 3 <= len(name) <= 5 and name.endswith(("id", "no")) and name not in ENGLISH_WORDS


def _named_after(
    words: list[str],
    name: str,
    held: list[tuple[Table, Column]],
    by_entity: dict[str, list[Table]],
    keyed: dict[str, dict[tuple[str, ...], Column]],
    declared_columns: set[tuple[str, str]],
    add: Callable[[InferredJoin], None],
) -> None:
    """A column whose name ends with another table's name (`link_to_member` -> member.member_id), less sure."""
    for size in (2, 1):
        entity = " ".join(words[-size:])
        for owner in by_entity.get(entity, []) if len(words) > size else []:
            target = keyed[owner.name].get((*words[-size:], "id")) or _key_column(keyed[owner.name], "id")
            if target is None:
                continue
            for t, c in held:
                if t.name != owner.name and (t.name, name) not in declared_columns and compatible(c, target):
                    add(InferredJoin(t.name, (c.name,), owner.name, (target.name,), 0.6, "names"))
            return


def _domain(table: str) -> str:
    """What a table's name says it belongs to: its schema (`sales.orders`), else its first word that is no
    warehouse prefix (`billing_appointment_eu` -> `billing`, `dim_sales_customer` -> `sales`)."""
    if "." in table:
        return table.rsplit(".", 1)[0].lower()
    words = [w for w in split_identifier(table) if w not in _PREFIXES]
    return words[0] if words else ""


def _unambiguous(joins: list[InferredJoin]) -> list[InferredJoin]:
    """A column's candidates where they are few (at most MAX_TIED_TARGETS); where they are more, only the
    likeliest, if few; else only those of the column's own schema or domain, if few; else none: a name that
    fits many tables equally well does not say which one it joins."""
    by_source: dict[tuple[str, str], list[InferredJoin]] = {}
    for join in joins:
        by_source.setdefault((join.table, join.columns[0].lower()), []).append(join)
    kept: list[InferredJoin] = []
    for (table, _), candidates in by_source.items():
        if len(candidates) > MAX_TIED_TARGETS:
            best = max(j.confidence for j in candidates)
            candidates = [j for j in candidates if j.confidence == best]
        if len(candidates) > MAX_TIED_TARGETS:
            domain = _domain(table)
            candidates = [j for j in candidates if _domain(j.ref_table) == domain]
        if len(candidates) <= MAX_TIED_TARGETS:
            kept += candidates
    return kept


def _key_column(columns: dict[tuple[str, ...], Column], key_word: str) -> Column | None:
    """The plain key of a table a `<entity>_<key>` column points at: the same key word, else `id` or `key`."""
    return columns.get((key_word,)) or columns.get(("id",)) or columns.get(("key",))


def with_joins(catalog: Catalog, joins: Sequence[InferredJoin], min_confidence: float = 0.5) -> Catalog:
    """A copy of the catalog whose tables also carry the inferred joins (as foreign keys marked inferred)."""
    extra: dict[str, list[ForeignKey]] = {}
    for join in joins:
        if join.confidence >= min_confidence and join.table in catalog.tables and join.ref_table in catalog.tables:
            extra.setdefault(join.table, []).append(join.as_foreign_key())
    if not extra:
        return catalog
    tables = {
        name: replace(t, foreign_keys=[*t.foreign_keys, *extra[name]]) if name in extra else t
        for name, t in catalog.tables.items()
    }
    return Catalog(tables=tables, dialect=catalog.dialect)


def without_keys(catalog: Catalog) -> Catalog:
    """The catalog with every declared primary and foreign key removed (the bench's `--drop-keys`)."""
    tables = {
        name: replace(t, primary_key=[], foreign_keys=[], columns=[replace(c, primary_key=False) for c in t.columns])
        for name, t in catalog.tables.items()
    }
    return Catalog(tables=tables, dialect=catalog.dialect)
