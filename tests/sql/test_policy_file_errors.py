"""Every error a policy file can raise, word for word, parsed and read from a file (where the file's name, and
the line where the parser knows it, begin the message): what an operator reads to fix the file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sophrosyne.errors import ConfigError
from sophrosyne.sql.policy import hash_token, load_policy, parse_policy

HEX = "ab" * 32
# name -> (the file, the message parsed, the line the file's message names or None, the hint)
CASES: dict[str, tuple[str, str, int | None, str | None]] = {
    "unknown_top_key": (
        "foo = 1\n[roles.a]\n",
        "unknown key `foo`",
        None,
        "expected one of: default_role, identity, roles, tokens, tools",
    ),
    "roles_not_a_table": ("roles = 1\n", "`roles` must be a dict, not int", None, None),
    "no_role": ('default_role = "a"\n', "the policy defines no role", None, "add a [roles.NAME] table"),
    "role_not_a_table": ("roles = { a = 1 }\n", "`roles.a` must be a dict, not int", None, None),
    "default_role_not_a_string": ("default_role = 1\n[roles.a]\n", "`default_role` must be a str, not int", None, None),
    "default_role_missing": ("[roles.b]\n[roles.a]\n", "`default_role` is missing", None, "set it to one of: a, b"),
    "default_role_unknown": (
        'default_role = "adm"\n[roles.admin]\n[roles.ops]\n',
        "`default_role` names unknown role `adm`",
        1,
        "Did you mean `admin`? The roles are admin, ops.",
    ),
    "tokens_not_a_table": ("tokens = 1\n[roles.a]\n", "`tokens` must be a dict, not int", None, None),
    "token_not_a_digest": (
        'default_role = "a"\n[roles.a]\n[tokens]\nabcdefghijklmnopq = "a"\n',
        "tokens: `abcdefghijkl...` is not a sha256 hex digest",
        None,
        "store sha256(token) in lower-case hex, never the token itself",
    ),
    "token_role_not_a_string": (
        f'default_role = "a"\n[roles.a]\n[tokens]\n{HEX} = 1\n',
        "`tokens.abababababab` must be a str, not int",
        None,
        None,
    ),
    "token_role_unknown": (
        f'default_role = "admin"\n[roles.admin]\n[roles.ops]\n[tokens]\n{HEX} = "adm"\n',
        "tokens: a token maps to unknown role `adm`",
        5,
        "Did you mean `admin`? The roles are admin, ops.",
    ),
    "role_unknown_key": (
        "[roles.a]\nfoo = 1\n",
        "unknown key `roles.a.foo`",
        None,
        "expected one of: deny, description, free_sql, tables, unlisted",
    ),
    "unlisted_not_a_string": ("[roles.a]\nunlisted = 1\n", "`roles.a.unlisted` must be a str, not int", None, None),
    "unlisted_neither": (
        '[roles.a]\nunlisted = "maybe"\n',
        'roles.a.unlisted must be "allow" or "deny", not \'maybe\'',
        None,
        None,
    ),
    "tables_not_a_table": ("[roles.a]\ntables = 1\n", "`roles.a.tables` must be a dict, not int", None, None),
    "rule_not_a_table": ("[roles.a]\ntables = { t = 1 }\n", "`roles.a.tables.t` must be a dict, not int", None, None),
    "rule_unknown_key": (
        '[roles.a.tables.t]\nfilter = "x = 1"\n',
        "unknown key `roles.a.tables.t.filter`",
        None,
        "expected one of: columns, hidden, row_filter",
    ),
    "row_filter_not_a_string": (
        "[roles.a.tables.t]\nrow_filter = 1\n",
        "`roles.a.tables.t.row_filter` must be a str, not int",
        None,
        None,
    ),
    "row_filter_not_sql": (
        '[roles.a.tables.t]\nrow_filter = "x = = 1"\n',
        "row filter of `roles.a.tables.t` does not parse: 'x = = 1': Syntax error at line 1, column 5 near `=`: "
        "the EQ clause is incomplete.",
        None,
        "Write a predicate such as `region = 'EU'` or `dept IN ('D1', 'D2')`.",
    ),
    "columns_not_names": (
        '[roles.a.tables.t]\ncolumns = ["a", ""]\n',
        "`roles.a.tables.t.columns` must be a list of names",
        None,
        None,
    ),
    "hidden_not_a_list": (
        '[roles.a.tables.t]\nhidden = "a"\n',
        "`roles.a.tables.t` must be a list, not str",
        None,
        None,
    ),
    "deny_not_names": ("[roles.a]\ndeny = [1]\n", "`roles.a.deny` must be a list of names", None, None),
    "denied_and_ruled": (
        '[roles.a]\ndeny = ["T"]\n[roles.a.tables.t]\n',
        "roles.a: `t` is both denied and given a rule",
        None,
        "keep one of the two",
    ),
    "description_not_a_string": (
        "[roles.a]\ndescription = 1\n",
        "`roles.a.description` must be a str, not int",
        None,
        None,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_policy_error_names_the_key_and_what_to_do(name: str, tmp_path: Path) -> None:
    text, message, line, hint = CASES[name]
    with pytest.raises(ConfigError) as parsed:
        parse_policy(tomllib.loads(text))
    assert (parsed.value.message, parsed.value.hint) == (message, hint)
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as read:
        load_policy(path)
    assert (read.value.message, read.value.hint) == (f"{path}{f':{line}' if line else ''}: {message}", hint)


def test_an_unknown_role_is_named_with_the_policy_it_is_missing_from(tmp_path: Path) -> None:
    text = 'default_role = "ops"\n[roles.admin]\n[roles.ops]\n'
    for policy, where in ((parse_policy(tomllib.loads(text)), "the policy"), (None, None)):
        if policy is None:
            path = tmp_path / "policy.toml"
            path.write_text(text, encoding="utf-8")
            policy, where = load_policy(path), f"policy file {path}"
        with pytest.raises(ConfigError) as caught:
            policy.role("admn")
        assert (caught.value.message, caught.value.hint) == (
            f"no role `admn` in {where}",
            "Did you mean `admin`? The roles are admin, ops.",
        )
    assert parse_policy(tomllib.loads(text)).where("roles", "admin") == "the policy"


def test_a_missing_or_broken_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy(tmp_path / "absent.toml")
    assert caught.value.message == f"policy file {tmp_path / 'absent.toml'} does not exist"
    broken = tmp_path / "broken.toml"
    broken.write_bytes(b'[roles.a]\ndescription = "caf\xe9"\n')  # Latin-1, not UTF-8
    with pytest.raises(ConfigError, match=f"policy file {broken} is not valid TOML: "):
        load_policy(broken)


def test_a_token_is_stored_as_the_sha256_of_its_utf8_bytes_in_lower_case_hex() -> None:
    assert hash_token("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"


def test_a_role_keeps_its_description() -> None:
    policy = parse_policy(tomllib.loads('default_role = "a"\n[roles.a]\ndescription = "Reads sales."\n[roles.b]\n'))
    assert (policy.roles["a"].description, policy.roles["b"].description) == ("Reads sales.", "")


def test_an_unknown_role_unlike_any_gets_the_list_alone() -> None:
    policy = parse_policy(tomllib.loads('default_role = "ops"\n[roles.admin]\n[roles.ops]\n'))
    with pytest.raises(ConfigError) as caught:
        policy.role("qqqq")
    assert caught.value.hint == "The roles are admin, ops."
