"""Text from the database shown to an agent: escaped to one line, inside a data block that a per-response nonce
closes, so that no name, value, comment or engine message can end the block or start a line of its own."""

from __future__ import annotations

import re
import secrets


def new_nonce() -> str:
    return secrets.token_hex(4)


def open_data(nonce: str) -> str:
    return f"<data {nonce}>"


def close_data(nonce: str) -> str:
    return f"</data {nonce}>"


# A block as open_data and close_data write it, its content between (a nonce is hexadecimal).
_BLOCK = re.compile(r"<data ([0-9a-f]+)>\n?(.*?)</data \1>", re.DOTALL)


def block_contents(text: str) -> list[str]:
    """The contents of the data blocks in a response, in order: what the database returned, nothing else."""
    return [match.group(2) for match in _BLOCK.finditer(text)]


def _escapes() -> dict[int, str]:
    # Every character that str.splitlines() ends a line at (\n \r \v \f \x1c-\x1e \x85 U+2028 U+2029), and every
    # other control character (a terminal obeys ESC sequences; a NUL or backspace hides what follows). A tab
    # stays: it moves no text to another line and is common in ordinary values.
    table = {code: f"\\u{code:04x}" for code in [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}
    table.update({ord("\n"): "\\n", ord("\r"): "\\r"})
    del table[ord("\t")]
    return table


_ESCAPES = _escapes()


def escaped(text: str) -> str:
    """`text` on one line: each line-breaking or control character written as an escape (`\\n`, `\\r`,
    `\\u2028`, …), so that it reads as the value it is and cannot pose as the end of a block or a new line.

    The one place where database text is escaped: every response line, every error, every terminal cell.
    The escapes are also JSON's, so escaping a line of JSON keeps it valid. Ordinary text is unchanged.
    """
    return text.translate(_ESCAPES)
