"""Finding the values of `.env` in the files a revision bundles, as written or disguised.

A value is looked for anywhere (glued inside a longer word too), in any letter case, and also
reversed, hex-encoded, base64-encoded (standard or URL-safe alphabet, at any of the three
byte offsets inside a longer encoded text), URL-encoded, and broken up by newlines,
whitespace, quotes or string concatenation (`"sk-12" + "34"`, `"sk-12" \\` + newline, ...).

One search per form catches all that: each file and each form of a value are compared
*folded*: in lower case, without whitespace, quotes, backslashes, `-` or the usual
concatenation marks (`+ . & | ( ) [ ] ,`), with `_` as `/` (so the two base64 alphabets
agree). Folding keeps each line's characters in order, so a hit's line is found by folding
the file line by line. URL-encoded text is decoded, then folded, in a second view of the
files that have any.

Values too short or too plain to be a secret are not looked for (`counts_as_secret`).
"""

from __future__ import annotations

import base64
import re
import string
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

MIN_LENGTH = 8  # a value shorter than this is never taken for a secret
PLAIN_WORD_LENGTH = 20  # a lower-case word shorter than this is no secret (e.g. "scripted")
NUMBER_LENGTH = 16  # a number, date or version shorter than this is no secret
DISTINCT = 6  # a value of fewer different characters is a placeholder ("sk-xxxxxxxx")

_DROPPED = b" \t\r\n\f\v'\"`\\+.&|()[],-"
_FOLD = bytes.maketrans(
    string.ascii_uppercase.encode() + b"_", string.ascii_lowercase.encode() + b"/"
)
_NUMBER = re.compile(r"[0-9.,:/+ _-]+")


def counts_as_secret(value: str) -> bool:
    """Whether a `.env` value could be a credential, so must not be bundled: 8 characters or
    more besides the ones folding drops, of 6 different ones or more (not a placeholder such
    as `sk-xxxxxxxx`), and neither a plain lower-case word shorter than 20 characters (such
    as `scripted`, the stand-in key of docs/testing.md) nor a number, date or version shorter
    than 16."""
    if len(fold(value.encode("utf-8"))) < MIN_LENGTH or len(set(value)) < DISTINCT:
        return False
    if len(value) < PLAIN_WORD_LENGTH and value.isalpha() and value.islower():
        return False
    return not (len(value) < NUMBER_LENGTH and _NUMBER.fullmatch(value))


def fold(data: bytes) -> bytes:
    return data.translate(_FOLD, _DROPPED)


def _url_decoded(data: bytes) -> bytes:
    return fold(unquote_to_bytes(data))


@dataclass(frozen=True)
class Form:
    """One form of a value, folded, and what to call it in a message ("" as written)."""

    text: bytes
    how: str


@dataclass(frozen=True)
class Leak:
    file: str
    line: int
    name: str
    how: str


def forms(value: str) -> list[Form]:
    """The forms `value` (a secret: `counts_as_secret`) is looked for in, the value as
    written first."""
    raw = value.encode("utf-8")
    found = [
        Form(fold(raw), ""),
        Form(fold(raw[::-1]), "reversed"),
        Form(raw.hex().encode("ascii"), "hex-encoded"),
        *(Form(fold(part), "base64-encoded") for part in _base64_parts(raw)),
    ]
    return [found[0], *(form for form in found[1:] if len(form.text) >= MIN_LENGTH)]


def _base64_parts(raw: bytes) -> Iterator[bytes]:
    """For each offset of `raw` in a longer encoded text (0, 1 or 2 bytes past a 3-byte
    boundary), the base64 characters that depend on `raw` alone."""
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw)
        yield encoded[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6]


def find_leaks(contents: Mapping[str, bytes], env: Mapping[str, str]) -> list[Leak]:
    """Where each secret of `env` (name → value) is in each file: once per file and name."""
    values = {name: value.strip() for name, value in env.items()}
    searched = {name: forms(value) for name, value in values.items() if counts_as_secret(value)}
    sieve = _Sieve([form.text for value_forms in searched.values() for form in value_forms])
    leaks: list[Leak] = []
    for file, data in contents.items() if searched else ():
        folded = fold(data)
        decoded = _url_decoded(data) if b"%" in data else None
        decoded = None if decoded == folded else decoded
        if not (sieve.may_hold(folded) or (decoded is not None and sieve.may_hold(decoded))):
            continue
        for name, value_forms in searched.items():
            found = _find(folded, decoded, value_forms)
            if found is not None:
                at, how, url_decoded = found
                line = _line_of(data, at, url_decoded=url_decoded)
                leaks.append(Leak(file, line, name, how or _plain_how(data, values[name])))
    return leaks


class _Sieve:
    """A quick test that a view holds none of some texts, for many texts at once.

    A text of 8k + 7 bytes or more found at position p of a view holds, at its offset
    j = -p mod 8k (0 to 8k - 1), the 8 bytes the view has at p + j, a multiple of 8k. So the
    view's 8-byte words at multiples of 8k (read as integers at C speed) meet the set of the
    text's first 8k 8-byte windows wherever the text is. Reading the words costs about as
    much as 16/k searches for one text, so texts are grouped by the largest k (8, 4, 2 or 1)
    their length allows, and a group of fewer than 16/k texts is searched text by text.
    """

    WORD = 8
    STRIDES = (8, 4, 2, 1)  # in words

    def __init__(self, texts: list[bytes]) -> None:
        groups: dict[int, list[bytes]] = {}
        for text in texts:
            stride = next((k for k in self.STRIDES if len(text) >= self.WORD * (k + 1) - 1), 0)
            groups.setdefault(stride, []).append(text)
        self._windows: dict[int, set[int]] = {}
        self._one_by_one: list[bytes] = []
        for stride, group in groups.items():
            if not stride or len(group) < 16 // stride:
                self._one_by_one += group
                continue
            self._windows[stride] = {
                _words(text[start : start + self.WORD])[0]
                for text in group
                for start in range(self.WORD * stride)
            }

    def may_hold(self, view: bytes) -> bool:
        if any(text in view for text in self._one_by_one):
            return True
        words = _words(view) if self._windows else array("Q")
        return any(not windows.isdisjoint(words[::k]) for k, windows in self._windows.items())


def _words(data: bytes) -> array[int]:
    """`data`'s 8-byte words at multiples of 8, as integers (a trailing part left out)."""
    return array("Q", data[: len(data) - len(data) % 8])


def _find(
    folded: bytes, decoded: bytes | None, value_forms: list[Form]
) -> tuple[int, str, bool] | None:
    """Where the earliest of `value_forms` is in `folded`, or else the first form (the value
    as written) in `decoded` (the URL-decoded view; None when nothing was decoded)."""
    hits = [(at, form.how) for form in value_forms if (at := folded.find(form.text)) >= 0]
    if hits:
        at, how = min(hits)
        return at, how, False
    at = -1 if decoded is None else decoded.find(value_forms[0].text)
    return (at, "URL-encoded", True) if at >= 0 else None


def _plain_how(data: bytes, value: str) -> str:
    """How `value`, found folded in `data`, was written there ("" as it is)."""
    raw = value.encode("utf-8")
    ways = []
    if raw.lower() in data.lower() and raw not in data:
        ways.append("in another letter case")
    if raw.lower() not in data.lower():
        ways.append("split up")
    return " and ".join(ways)


def _line_of(data: bytes, at: int, *, url_decoded: bool = False) -> int:
    """The line of `data` holding character `at` of its folded (or URL-decoded) view."""
    seen = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        seen += len(_url_decoded(line) if url_decoded else fold(line))
        if seen > at:
            return number
    return data.count(b"\n") + 1
