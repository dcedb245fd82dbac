"""Reading a question and its knowledge entries: column names written in them, quoted literals, clauses."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sophrosyne.base.words import QUERY_NOISE, STOPWORDS, word_tokens

Knowledge = str | list[str] | None
"""Knowledge entries as a caller gives them: one text, a list of entries, or none."""

_BACKTICK = re.compile(r"`([^`]+)`|\[([^\]]+)\]")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”")
_COMPARED = re.compile(
    r"([A-Za-z_][\w.]*)\s*(?:=|==|!=|<>|>=|<=|>|<|\s(?:not\s+)?like\s|\s(?:not\s+)?in\s*\(|\sbetween\s|\sis\s+(?:not\s+)?null)",
    re.IGNORECASE,
)
_CALL_ARG = re.compile(r"\(\s*([A-Za-z_][\w.]*)")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")
_CLAUSE = re.compile(r";|\n|\.\s+(?=[A-Z])")
# How BIRD's evidence links a phrase of the question to the schema ("X refers to col = 'v'", "X means ...").
# Other knowledge written this way benefits; knowledge phrased otherwise is still read clause by clause.
_LINK = re.compile(r"\b(?:refers? to|means?|stands? for|is|are|=)\b", re.IGNORECASE)


def knowledge_text(knowledge: Knowledge) -> str:
    """The knowledge entries as one text, entries separated by `; `."""
    return "; ".join(knowledge) if isinstance(knowledge, list) else (knowledge or "")


def with_inferred_columns(knowledge: str, names: list[str]) -> str:
    """The knowledge with column names inferred elsewhere (a model) appended as written-out identifiers."""
    return "; ".join(filter(None, [knowledge, " ".join(f"`{n}`" for n in names)])) if names else knowledge


def infer_identifiers(knowledge: str) -> tuple[list[str], list[str]]:
    """Column names written in a knowledge entry: (code-like mentions, plain-word mentions)."""
    strong: list[str] = []
    for match in _BACKTICK.finditer(knowledge):
        strong.append(match.group(1) or match.group(2))
    unquoted = _QUOTED.sub(" _value_ ", _BACKTICK.sub(" _ident_ ", knowledge))
    strong += [m.group(1) for m in _COMPARED.finditer(unquoted)]
    strong += [m.group(1) for m in _CALL_ARG.finditer(unquoted)]
    weak: list[str] = []
    for token in IDENTIFIER.findall(unquoted):
        if token in ("_ident_", "_value_"):
            continue
        if "_" in token or "." in token or re.search(r"[a-z][A-Z]|\d", token):
            strong.append(token)
        else:
            weak.append(token)
    return [s for s in strong if s not in ("_ident_", "_value_")], weak


def quoted_literals(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


_CAPITALISED = re.compile(
    r"[A-Z][\w'&.-]*(?:\s+(?:(?:of|the|and|with|in|on|for|to|at|by|from|a|an|de|la|le|von|van|&)\s+)*[A-Z0-9][\w'&.-]*)*"
)
_SENTENCE_START = re.compile(r"(?:^|[.?!;:]\s+|\n)\s*$")


def capitalised_phrases(text: str) -> list[str]:
    """Runs of capitalised words, as names are written ("Dean Peeters", "International Finance", "The Rise of
    the Blue Beetle"): a sentence's first word alone is left out, as is a run of stopwords ("What", "I")."""
    phrases = []
    for match in _CAPITALISED.finditer(text):
        phrase = match.group(0).strip(".'-&")
        first_word = bool(_SENTENCE_START.search(text[: match.start()]))
        if first_word and " " not in phrase:
            continue
        if all(w in STOPWORDS for w in word_tokens(phrase)):
            continue
        phrases.append(phrase)
    return phrases


_LIST_JOINER = re.compile(r"\s+(?:and|&)\s+")


def listed_names(phrase: str) -> list[str]:
    """The names a capitalised phrase lists ("Masters and Bachelors" -> "Masters", "Bachelors"); [] when it
    lists none ("Gone with the Wind")."""
    parts = [p.strip() for p in _LIST_JOINER.split(phrase)]
    return [p for p in parts if p] if len(parts) > 1 else []


def knowledge_units(knowledge: str) -> list[str]:
    """Clauses of a knowledge entry, and each side of `A refers to B`."""
    units: list[str] = []
    for clause in _CLAUSE.split(knowledge):
        clause = clause.strip()
        if not clause:
            continue
        units.append(clause)
        parts = [p.strip() for p in _LINK.split(clause, maxsplit=1)]
        if len(parts) == 2 and all(parts):
            units.extend(parts)
    return units


def described_phrases(knowledge: str) -> list[str]:
    """The described side of each `A refers to B` clause: `A`, the words of the question it explains."""
    phrases: list[str] = []
    for clause in _CLAUSE.split(knowledge):
        parts = _LINK.split(clause, maxsplit=1)
        if len(parts) == 2 and parts[0].strip():
            phrases.append(parts[0].strip())
    return phrases


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
PASSAGE_CHARS = 600  # a passage: a paragraph, or a run of short ones, or a slice of a long table or list


def passages(document: str) -> list[str]:
    """A long document cut into passages under PASSAGE_CHARS, each led by its section heading."""
    out: list[str] = []
    heading = ""
    block: list[str] = []

    def flush() -> None:
        lines = [line for line in block if line.strip()]
        block.clear()
        chunk: list[str] = []
        size = 0
        for line in lines:
            if chunk and size + len(line) > PASSAGE_CHARS:
                out.append("\n".join([heading, *chunk]).strip())
                chunk, size = [], 0
            chunk.append(line[: PASSAGE_CHARS * 2])
            size += len(line) + 1
        if chunk:
            out.append("\n".join([heading, *chunk]).strip())

    for line in document.splitlines():
        match = _HEADING.match(line)
        if match:
            flush()
            heading = match.group(1).strip()
        elif not line.strip() and sum(len(b) for b in block) > PASSAGE_CHARS // 2:
            flush()
        else:
            block.append(line)
    flush()
    return [p for p in out if p]


def relevant_passages(
    wanted: Iterable[str],
    document: str,
    similarity: list[float] | None = None,
    keep: int = 4,
    max_chars: int = 2400,
    parts: list[str] | None = None,
) -> list[str]:
    """The passages of a long knowledge document that bear on the question, best first: by the share of the
    question's content words (`wanted`: `Question.content`) they hold, plus their embedding similarity when
    given (one per passage)."""
    parts = passages(document) if parts is None else parts
    wanted = set(wanted)
    scored = []
    for i, part in enumerate(parts):
        words = set(tokenize_words(part))
        overlap = len(wanted & words) / len(wanted) if wanted else 0.0
        dense = similarity[i] if similarity is not None and i < len(similarity) else 0.0
        scored.append((overlap + dense, i))
    chosen: list[str] = []
    used = 0
    for _, i in sorted(scored, key=lambda s: (-s[0], s[1]))[:keep]:
        if used + len(parts[i]) > max_chars and chosen:
            break
        chosen.append(parts[i])
        used += len(parts[i])
    return chosen


def tokenize_words(text: str) -> list[str]:
    """Content words, stemmed: what two texts must share to be about the same thing."""
    from sophrosyne.base.words import tokenize

    return [w for w in tokenize(text) if w not in QUERY_NOISE and not w.isdigit()]
