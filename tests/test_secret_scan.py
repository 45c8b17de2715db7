"""A `.env` value is found in a file to bundle however it was disguised, and only a value that
could be a secret is looked for (tests/corpus/secret-in-file* has one project per disguise)."""

from __future__ import annotations

import base64
import string
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentctl.errors import ConfigError
from agentctl.project import load_project
from agentctl.project.secret_scan import counts_as_secret, find_leaks
from tests.conftest import WriteFiles

KEY_CHARS = string.ascii_letters + string.digits + "-_"
keys = st.builds(
    str.__add__,
    st.sampled_from(string.ascii_letters + string.digits),
    st.text(KEY_CHARS, min_size=11, max_size=63),
).filter(counts_as_secret)
prose = st.text(string.ascii_letters + string.digits + " .,;:-_()'\"\n", max_size=300)


def _split(key: str, cuts: list[int], glue: str) -> str:
    points = sorted({c % len(key) for c in cuts} - {0})
    parts = [key[a:b] for a, b in zip([0, *points], [*points, len(key)], strict=True)]
    return glue.join(parts)


def _b64(std: bool) -> Callable[[str, bytes], str]:
    def encode(key: str, before: bytes) -> str:
        data = before + key.encode() + b"\n"
        return (base64.b64encode if std else base64.urlsafe_b64encode)(data).decode()

    return encode


DISGUISES: dict[str, Callable[[str, bytes], str]] = {
    "glued": lambda key, before: f"x{before.hex()}{key}y",
    "reversed": lambda key, _: key[::-1],
    "upper": lambda key, _: key.upper(),
    "lower": lambda key, _: key.lower(),
    "hex": lambda key, _: key.encode().hex(),
    "HEX": lambda key, _: key.encode().hex().upper(),
    "base64": _b64(std=True),
    "base64-urlsafe": _b64(std=False),
    "base64-wrapped": lambda key, before: base64.encodebytes(before + key.encode() * 4).decode(),
    "url-encoded": lambda key, _: quote(key, safe=""),
    "url-encoded-all": lambda key, _: "".join(f"%{b:02X}" for b in key.encode()),
}
SPLITS = ['"\n"', '" + "', "' . '", "\\\n", '",\n  "', " \n ", '"\n    + "']


@settings(max_examples=100, deadline=None)
@given(
    key=keys,
    disguise=st.sampled_from(sorted(DISGUISES)),
    before=st.binary(max_size=5),
    head=prose,
    tail=prose,
)
def test_a_disguised_key_is_found_on_its_line(
    key: str, disguise: str, before: bytes, head: str, tail: str
) -> None:
    text = f"{head}\n{DISGUISES[disguise](key, before)}\n{tail}"
    leaks = find_leaks({"f.md": text.encode()}, {"API_KEY": key})
    assert [(leak.file, leak.name) for leak in leaks] == [("f.md", "API_KEY")]
    assert leaks[0].line <= head.count("\n") + 2


@settings(max_examples=100, deadline=None)
@given(key=keys, cuts=st.lists(st.integers(1, 63), min_size=1, max_size=4))
def test_a_key_split_across_lines_or_strings_is_found(key: str, cuts: list[int]) -> None:
    for glue in SPLITS:
        text = f'intro\nKEY = "{_split(key, cuts, glue)}"\n'
        leaks = find_leaks({"client.py": text.encode()}, {"API_KEY": key})
        assert [leak.line for leak in leaks] == [2], glue


random_keys = keys.filter(lambda key: len(set(key)) >= 10)  # as keys are: not "a0000000b"


@settings(max_examples=100, deadline=None)
@given(key=random_keys, other=random_keys, text=prose)
def test_another_key_is_not_taken_for_it(key: str, other: str, text: str) -> None:
    if other.lower() in key.lower() or key.lower() in text.lower():
        return
    data = f"{text}\n{other}\n{base64.b64encode(other.encode()).decode()}\n".encode()
    assert find_leaks({"f.md": data}, {"API_KEY": key}) == []


@pytest.mark.parametrize(
    "value",
    ["true", "1", "8080", "localhost", "scripted", "2024-01-01", "3.141592", "12:30:00",
     "1.22.333-4", "1234567890", "0.0.0.0:80", "sk-xxxxxxxxxxxx", "XXXXXXXXXXXXXXXXXXXX"],
)  # fmt: skip
def test_short_or_plain_values_are_no_secrets(value: str) -> None:
    assert not counts_as_secret(value)
    text = f"{value} {value.upper()} {value[::-1]} {base64.b64encode(value.encode()).decode()}"
    assert find_leaks({"f.md": text.encode()}, {"VALUE": value}) == []


@pytest.mark.parametrize(
    "value", ["Abcdefgh1", "correcthorsebatterystaple", "p@ss:w0rd", "sk-0123456789abcdef"]
)
def test_values_that_could_be_keys_are_secrets(value: str) -> None:
    assert counts_as_secret(value)


def test_the_message_names_the_file_line_and_variable_never_the_value(
    write_files: WriteFiles,
) -> None:
    key = "sk-live-0123456789abcdef"
    files = {
        "agent.toml": '[agent]\nname = "leaky"\n',
        "AGENTS.md": f"You are an agent.\n\n\nSession: {base64.b64encode(key.encode()).decode()}\n",
        ".env": f"OPENAI_API_KEY={key}\n",
    }
    with pytest.raises(ConfigError) as refused:
        load_project(write_files(files))
    [problem] = refused.value.problems
    assert str(problem).startswith(
        "AGENTS.md: line 4: contains the value of OPENAI_API_KEY from .env (base64-encoded) — "
        "remove it from the file"
    )
    assert key not in str(problem)
    assert "c2stbGl2" not in str(problem)


def test_binary_files_are_searched_too(tmp_path: Path) -> None:
    key = "sk-live-0123456789abcdef"
    binary = bytes(range(11, 256))
    data = binary + b"\n" + key.encode()[::-1] + binary
    leaks = find_leaks({"skills/data/blob.bin": data}, {"API_KEY": key})
    assert [(leak.line, leak.how) for leak in leaks] == [(2, "reversed")]
