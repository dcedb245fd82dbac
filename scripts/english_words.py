"""Write src/sophrosyne/base/english_words.txt: the English words of 3 to 5 letters, from WordNet 3.0.

`base/names.py` never reads such a word as an abbreviation a schema teaches (`count` is no short `countries`,
`organ` no short `organization`). The source is Debian's `wordnet-base` (`apt-get install wordnet-base`), the
lemmas of its four index files; the words are kept in the package so that every install reads the same.

    python scripts/english_words.py [/usr/share/wordnet]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "src" / "sophrosyne" / "base" / "english_words.txt"
WORD = re.compile(r"[a-z]{3,5}")
HEADER = """\
# English words of 3 to 5 letters: the lemmas of WordNet 3.0's index files (written by scripts/english_words.py).
# WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. Permission to use, copy, modify and
# distribute this database for any purpose and without fee or royalty is granted under the WordNet 3.0 license
# (https://wordnet.princeton.edu/license-and-commercial-use), provided this notice appears on all copies.
# THIS DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR
# IMPLIED. The name of Princeton University or Princeton may not be used in advertising or publicity pertaining
# to distribution of the database.
"""


def main(folder: Path) -> None:
    found: set[str] = set()
    for part in ("noun", "verb", "adj", "adv"):
        for line in (folder / f"index.{part}").read_text().splitlines():
            lemma = line.split(" ", 1)[0]
            if not line.startswith(" ") and WORD.fullmatch(lemma):
                found.add(lemma)
    TARGET.write_text(HEADER + "\n".join(sorted(found)) + "\n")
    print(f"wrote {len(found)} words to {TARGET}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"))
