"""The stdio handshake's snapshot is another one whenever what decides its answers changes: the arguments, the
settings' variables, the files the arguments name (a start with exports allowed once served a stale tool list)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sophrosyne.serve.handshake import snapshot_path


def test_the_snapshot_follows_the_settings_variables_and_the_named_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOPHROSYNE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SOPHROSYNE_ALLOW_EXPORTS", raising=False)
    monkeypatch.chdir(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text("[roles.analyst]\n")
    argv = ["serve", "demo", "--policy", "policy.toml"]
    first = snapshot_path(argv)
    assert snapshot_path(argv) == first  # the same start, the same snapshot
    assert first.parent == tmp_path / "cache" / "handshake"

    monkeypatch.setenv("SOPHROSYNE_ALLOW_EXPORTS", "true")
    exports = snapshot_path(argv)
    assert exports != first
    monkeypatch.delenv("SOPHROSYNE_ALLOW_EXPORTS")
    assert snapshot_path(argv) == first

    policy.write_text("[roles.analyst]\nfree_sql = false\n")
    os.utime(policy, ns=(1, 1))  # another content, whatever the clock's resolution
    assert snapshot_path(argv) != first
    assert snapshot_path(["serve", "demo", "--policy=policy.toml"]) != snapshot_path(["serve", "demo"])

    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)  # `policy.toml` names no file here: another start
    assert snapshot_path(argv) not in (first, exports)
