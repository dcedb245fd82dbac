"""Several databases behind one server: the sources file, and the source each tool call goes to."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sophrosyne.base.toml_lines import TomlLines
from sophrosyne.engines.ssh import SSH, read_ssh
from sophrosyne.engines.tls import TLS, read_tls
from sophrosyne.errors import ConfigError, UnknownSource
from sophrosyne.settings import Settings
from sophrosyne.tools.list_sources import SourceInfo, SourceList, source_info

if TYPE_CHECKING:
    from sophrosyne.environment import Environment

_KEYS = {"path", "url", "description", "policy", "role", "descriptions", "tls", "ssh"}
# Keys whose value is a table, not a string.
_TABLES = {"tls", "ssh"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# user:password@ in a URL, the password written out rather than taken from a variable.
_LITERAL_PASSWORD = re.compile(r"^[a-z0-9+]+://[^/@:]*:(?!\$\{)[^/@]+@", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class SourceSpec:
    """One database of a sources file: where it is, what it holds, and who may see what of it."""

    name: str
    target: str  # a file path or a SQLAlchemy URL, variables expanded
    description: str = ""
    policy: Path | None = None
    role: str | None = None  # the role of a caller without a token (stdio)
    descriptions: Path | None = None  # BIRD-style column descriptions
    role_at: str = ""  # `file:line` where the role is named, for an error about it
    tls: TLS | None = None  # a server's TLS options (engines/tls.py)
    ssh: SSH | None = None  # the SSH server a server is reached through (engines/ssh.py)


def load_sources(path: Path) -> list[SourceSpec]:
    """Read a sources file (TOML, one `[sources.NAME]` table each); relative paths are from its folder.

    Secrets never sit in the file: a URL names them as `${VARIABLE}`, read from the environment.
    """
    path = Path(path)
    try:
        text = path.read_text()
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"sources file `{path}` does not exist.", hint="Give the path of a TOML file.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"sources file `{path}` is not valid TOML: {exc}.") from None
    tables = data.get("sources")
    if set(data) - {"sources"} or not isinstance(tables, dict) or not tables:
        raise ConfigError(
            f"sources file `{path}` needs one [sources.NAME] table per database and nothing else.",
            hint='Write [sources.hr] with path = "hr.sqlite" (or url = "postgresql://...").',
        )
    lines = TomlLines(path, text)
    return [_spec(path, name, entry, lines) for name, entry in tables.items()]


def _spec(path: Path, name: str, entry: Any, lines: TomlLines) -> SourceSpec:
    where = f"{path}: sources.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table.")
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a source name is a letter then letters, digits, `_` or `-`.")
    unknown = set(entry) - _KEYS
    if unknown:
        raise ConfigError(f"{where} has unknown key `{sorted(unknown)[0]}`.", hint=f"Keys: {', '.join(sorted(_KEYS))}.")
    if ("path" in entry) == ("url" in entry):
        raise ConfigError(f"{where} needs exactly one of `path` or `url`.")
    for key in sorted(_TABLES & set(entry)):
        if "url" not in entry:
            raise ConfigError(f"{where}.{key} is for a database server's `url`, not a file's `path`.")
    for key in _KEYS - _TABLES:
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(f"{where}.{key} must be a string.")
    folder = path.parent
    if "url" in entry:
        url = entry["url"]
        if _LITERAL_PASSWORD.match(url):
            raise ConfigError(
                f"{where}.url holds a password: secrets never go in the sources file.",
                hint="Write it as ${VARIABLE} and set that environment variable.",
            )
        target = _expand(url, where)
    else:
        target = str(_relative(folder, _expand(entry["path"], where)))
    return SourceSpec(
        name=name,
        target=target,
        description=" ".join(entry.get("description", "").split()),
        policy=_relative(folder, entry["policy"]) if "policy" in entry else None,
        role=entry.get("role"),
        descriptions=_relative(folder, entry["descriptions"]) if "descriptions" in entry else None,
        role_at=lines.where("sources", name, "role"),
        tls=read_tls(entry["tls"], f"{where}.tls", folder) if "tls" in entry else None,
        ssh=read_ssh(entry["ssh"], f"{where}.ssh", folder) if "ssh" in entry else None,
    )


def _check_role(spec: SourceSpec) -> None:
    """A role a sources file names must be a role of the source's policy: else it is refused at start, with the
    file and the line."""
    from sophrosyne.sql.policy import load_policy
    from sophrosyne.sql.policy.names import closest

    if spec.role is None:
        return
    if spec.policy is None:
        raise ConfigError(
            f"{spec.role_at}: sources.{spec.name}.role is `{spec.role}`, but the source has no policy.",
            hint='Give the source a policy file (policy = "FILE") that defines the role, or remove `role`.',
        )
    roles = sorted(load_policy(spec.policy).roles)
    if spec.role not in roles:
        near = closest(spec.role, roles)
        raise ConfigError(
            f"{spec.role_at}: sources.{spec.name}.role names role `{spec.role}`, which {spec.policy} does not define.",
            hint=(f"Did you mean `{near}`? " if near else "") + f"Its roles are {', '.join(roles)}.",
        )


def _expand(text: str, where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in os.environ:
            raise ConfigError(f"{where} needs the environment variable {name}, which is not set.")
        return os.environ[name]

    return _VARIABLE.sub(value, text)


def _relative(folder: Path, text: str) -> Path:
    given = Path(text).expanduser()
    return given if given.is_absolute() else folder / given


class Sources:
    """The databases one server serves, by name, each an Environment with its own policy and indexes.

    One database is the zero-config case: a single source, which tools may leave unnamed.
    """

    def __init__(self, environments: dict[str, Environment], descriptions: dict[str, str] | None = None) -> None:
        if not environments:
            raise ConfigError("a server needs at least one source.")
        self.environments = environments
        self.descriptions = descriptions or {}

    @classmethod
    def single(cls, env: Environment) -> Sources:
        return cls({env.name: env})

    @classmethod
    def open(cls, specs: list[SourceSpec], settings: Settings | None = None, *, probe: bool = True) -> Sources:
        """Open every source read-only, each with its own policy (the settings' own policy is not used).

        `probe`: as for Environment.open (a server passes False and reads each schema in the background)."""
        from sophrosyne.environment import Environment

        settings = settings or Settings()
        environments: dict[str, Environment] = {}
        try:
            for spec in specs:
                _check_role(spec)
                own = settings.replaced(policy_file=spec.policy)
                environments[spec.name] = Environment.open(
                    spec.target,
                    settings=own,
                    role_name=spec.role,
                    descriptions=spec.descriptions,
                    name=spec.name,
                    probe=probe,
                    tls=spec.tls,
                    ssh=spec.ssh,
                )
        except BaseException:
            for env in environments.values():
                env.close()
            raise
        return cls(environments, {spec.name: spec.description for spec in specs})

    @property
    def settings(self) -> Settings:
        """The server's limits: every source shares them (only the policy file differs between sources)."""
        return next(iter(self.environments.values())).settings

    @property
    def names(self) -> list[str]:
        return list(self.environments)

    def get(self, name: str | None) -> Environment:
        """The source a call names; it may be left out only when there is one."""
        return self.named(name)[1]

    def named(self, name: str | None) -> tuple[str, Environment]:
        """The name and Environment of the source a call names (case-insensitive); see `get`."""
        if name is None or not name.strip():
            if len(self.environments) == 1:
                return next(iter(self.environments.items()))
            raise UnknownSource(
                f"there are {len(self.environments)} sources: name one with `source`.",
                hint=f"The sources are {', '.join(self.names)}; list_sources describes them.",
            )
        wanted = name.strip().lower()
        for key, env in self.environments.items():
            if key.lower() == wanted:
                return key, env
        raise UnknownSource(f"no source `{name}`.", hint=f"The sources are {', '.join(self.names)}.")

    def list_sources(
        self, views: dict[str, Environment], question: str | None = None, knowledge: str | None = None
    ) -> SourceList:
        """Each source as its caller sees it (`views`: the Environment of the caller's role, by source), and
        with a question, which sources are likely irrelevant to it: those where no table reaches the score
        at which directives keep a table."""
        infos: list[SourceInfo] = []
        asked = bool(question or knowledge) and len(views) > 1
        for name, env in views.items():
            info = source_info(env)
            info.name = name
            info.description = self.descriptions.get(name, "")
            if asked:
                info.relevance = env.moderator.relevance(question, knowledge)
            infos.append(info)
        return SourceList(sources=infos)

    def close(self) -> None:
        for env in self.environments.values():
            env.close()
