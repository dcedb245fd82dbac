"""Build the thesaurus's shipped data (src/sophrosyne/directives/wordnet_nouns.gz) from WordNet 3.0's database
files as Debian's wordnet-base installs them (`apt-get install wordnet-base`: /usr/share/wordnet).

    python scripts/build_lexicon_data.py [WORDNET_FOLDER] [OUTPUT]

The file holds exactly what `directives/thesaurus.py` reads, and nothing else: every noun lemma with its senses
(WordNet's most frequent first), each noun sense's words and the senses one step more general or more specific
(the pointers of `RELATIONS`), the most senses each word has as a verb, an adjective or an adverb, the
irregular plurals of noun.exc and the irregular forms of verb.exc and adj.exc; WordNet's licence opens it (its
notice must appear on all copies)."""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sophrosyne.directives.thesaurus import DATA_FILE, OFFSET_WIDTH, RELATIONS, SECTION  # noqa: E402

WORDNET = Path("/usr/share/wordnet")
TITLE = "WordNet 3.0's nouns as sophrosyne's thesaurus reads them, built from Debian's wordnet-base."
OUTPUT = ROOT / "src" / "sophrosyne" / "directives" / DATA_FILE


def entries(path: Path) -> list[str]:
    """The lines of a WordNet file but its licence (the lines that open with a space)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith(" ")]


def notice(folder: Path) -> str:
    """WordNet's licence, as index.noun opens with it (numbered lines: `  1 This software ...`)."""
    opening = []
    for line in (folder / "index.noun").read_text(encoding="utf-8").splitlines():
        if not line.startswith(" "):
            break
        opening.append(re.sub(r"^ +[0-9]+ ?", "", line).rstrip())
    return "\n".join([TITLE, "", *opening])


def build(folder: Path) -> bytes:
    """The data file's content, uncompressed: sections joined by `SECTION`."""
    # A synset is found by the byte offset of its line, as in WordNet's own files; offsets are written with a
    # fixed width so that each line's offset is known before the lines that point to it are written.
    synsets = entries(folder / "data.noun")
    parsed = []
    for line in synsets:
        fields = line.split(" | ", 1)[0].split()
        count = int(fields[3], 16)
        words = " ".join(fields[4 + 2 * i].lower() for i in range(count))
        at = 4 + 2 * count
        targets = []
        for i in range(int(fields[at])):
            symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
            if pos == "n" and symbol in RELATIONS:
                targets.append(int(target))
        parsed.append((int(fields[0]), words, targets))
    offset: dict[int, str] = {}
    at = 0
    for wordnet_offset, words, targets in parsed:
        offset[wordnet_offset] = f"{at:0{OFFSET_WIDTH}d}"
        # The line `words|target target ...` and its newline.
        at += len(words.encode("utf-8")) + 1 + (OFFSET_WIDTH + 1) * len(targets) - (1 if targets else 0) + 1
    if at >= 10**OFFSET_WIDTH:
        raise SystemExit(f"the synsets take {at:,} bytes: raise OFFSET_WIDTH in directives/thesaurus.py")
    lines = [f"{words}|{' '.join(offset[t] for t in targets)}" for _, words, targets in parsed]
    nouns = []
    for line in entries(folder / "index.noun"):
        fields = line.split()
        offsets = fields[6 + int(fields[3]) :]
        nouns.append(" ".join([fields[0], *(offset[int(o)] for o in offsets)]))
    # A word's most senses as a verb, an adjective or an adverb: what tells whether it is mostly a noun.
    others: dict[str, int] = {}
    for pos in ("verb", "adj", "adv"):
        for line in entries(folder / f"index.{pos}"):
            fields = line.split()
            others[fields[0]] = max(others.get(fields[0], 0), int(fields[2]))
    # noun.exc: a plural's first singular is the one read.
    irregular: dict[str, str] = {}
    for line in (folder / "noun.exc").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            irregular.setdefault(parts[0], parts[1])
    # verb.exc and adj.exc: an irregular form's first base ("spoken" -> speak, "youngest" -> young).
    other_irregular: dict[str, str] = {}
    for pos in ("verb", "adj"):
        for line in (folder / f"{pos}.exc").read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                other_irregular.setdefault(parts[0], parts[1])
    sections = [
        notice(folder),
        "\n".join(sorted(nouns, key=lambda n: n.split(" ", 1)[0].encode())),
        "\n".join(lines),
        "\n".join(f"{w} {n}" for w, n in sorted(others.items(), key=lambda item: item[0].encode())),
        "\n".join(f"{w} {b}" for w, b in irregular.items()),
        "\n".join(f"{w} {b}" for w, b in other_irregular.items()),
    ]
    return SECTION.join(s.encode("utf-8") for s in sections)


def main(argv: list[str]) -> None:
    folder = Path(argv[1]) if len(argv) > 1 else WORDNET
    output = Path(argv[2]) if len(argv) > 2 else OUTPUT
    # mtime=0 and no file name in the header: the same files give the same bytes.
    output.write_bytes(gzip.compress(build(folder), compresslevel=9, mtime=0))
    print(f"wrote {output} ({output.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv)
