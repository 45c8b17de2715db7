"""Models' prices: the maintained table agentctl ships (genai-prices), the operator's file
taking precedence, and unknown models said to be unpriced, never guessed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentctl.metering import prices
from agentctl.metering.ledger import Ledger, Tokens
from agentctl.metering.prices import Price, Prices

MILLION = Tokens(input=1_000_000, output=1_000_000, cached=400_000, calls=1)


def test_the_table_prices_known_models_with_cache_reads() -> None:
    table = Prices()
    # gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output per million tokens.
    assert table.cost("openai:gpt-4o-mini", MILLION) == pytest.approx(
        0.6 * 0.15 + 0.4 * 0.075 + 0.6
    )
    cost = table.cost("anthropic:claude-sonnet-4-5", Tokens(1000, 1000))
    assert cost is not None
    assert cost > 0
    assert table.cost("google_genai:gemini-2.5-flash", Tokens(1000, 1000)) is not None


def test_unknown_and_local_models_are_unpriced() -> None:
    table = Prices()
    assert table.cost("openai:no-such-model", MILLION) is None
    assert table.cost("nowhere:gpt-4o-mini", MILLION) is None
    assert table.cost("gpt-4o-mini", MILLION) is None
    assert table.cost("ollama:llama3.2", MILLION) is None


def test_the_operators_file_takes_precedence(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(
        '["openai:gpt-4o-mini"]\ninput = 1\noutput = 2\ncached = 0.5\n'
        '["ollama:*"]\ninput = 0\noutput = 0\n'
        '["acme:house-model"]\ninput = 3\noutput = 4\n'
    )
    table = Prices.load(path)
    assert table.cost("openai:gpt-4o-mini", MILLION) == pytest.approx(0.6 + 0.2 + 2)
    assert table.cost("ollama:llama3.2", MILLION) == 0.0
    # cached defaults to the input price
    assert table.cost("acme:house-model", MILLION) == pytest.approx(3 + 4)
    # the others still from the table
    assert table.cost("openai:gpt-4o", MILLION) is not None
    as_json = tmp_path / "prices.json"
    as_json.write_text('{"acme:house-model": {"input": 1, "output": 1}}')
    assert Prices.load(as_json).cost("acme:house-model", MILLION) == pytest.approx(2)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not toml [", "is not valid"),
        ('["gpt-4o"]\ninput = 1\noutput = 1\n', "name it provider:model"),
        ('["openai:x"]\ninput = 1\n', "output must be a number"),
        ('["openai:x"]\ninput = -1\noutput = 1\n', "input must be 0 or more"),
        ('["openai:x"]\ninput = 1\noutput = 1\nreasoning = 2\n', "unknown key 'reasoning'"),
        ('["openai:x"]\ninput = true\noutput = 1\n', "input must be a number"),
        ('"openai:x" = 3\n', "expected a table"),
    ],
)
def test_a_wrong_prices_file_is_refused_saying_why(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match="AGENTCTL_PRICES_FILE") as refused:
        Prices.load(path)
    assert says in str(refused.value)
    with pytest.raises(ValueError, match="cannot read"):
        Prices.load(tmp_path / "missing.toml")


def test_a_ledgers_usage_priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('["openai:gpt-4o-mini"]\ninput = 1\noutput = 2\n')
    monkeypatch.setenv("AGENTCTL_PRICES_FILE", str(path))
    monkeypatch.setattr(prices, "_current", None)
    ledger = Ledger("r", "t", "bot")
    ledger.count("openai:gpt-4o-mini", Tokens(1000, 500))
    ledger.count("ollama:llama3.2", Tokens(10, 10))
    usage = prices.priced_usage(ledger)
    assert usage is not None
    assert usage["models"]["openai:gpt-4o-mini"]["cost_usd"] == pytest.approx(0.002)
    assert usage["models"]["ollama:llama3.2"]["cost_usd"] is None
    assert usage["cost_usd"] == pytest.approx(0.002)
    assert usage["unpriced_models"] == ["ollama:llama3.2"]
    assert usage["total_tokens"] == 1520
    only_local = Ledger("r", "t", "bot")
    only_local.count("ollama:llama3.2", Tokens(10, 10))
    priced = Prices({"x:y": Price(1, 1, 1)}).priced_usage(only_local)
    assert priced is not None
    assert priced["cost_usd"] is None
    assert Prices().priced_usage(Ledger("r", "t", "bot")) is None


def test_a_wrong_file_in_the_environment_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`serve` refuses to start with it (SettingsError); a process that did not check it
    first never fails a run's end for it."""
    path = tmp_path / "prices.toml"
    path.write_text("oops [")
    monkeypatch.setenv("AGENTCTL_PRICES_FILE", str(path))
    monkeypatch.setattr(prices, "_current", None)
    assert prices.current().overrides == {}
    assert "using the package's prices alone" in caplog.text
    with pytest.raises(ValueError, match="is not valid"):
        prices.configure(str(path))
    monkeypatch.setattr(prices, "_current", None)


def test_serve_refuses_to_start_with_a_wrong_prices_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('["gpt-4o"]\ninput = 1\noutput = 1\n')
    env = {
        **os.environ,
        "AGENTCTL_PRICES_FILE": str(path),
        "PLATFORM_API_KEY": "pk-prices-0123456789abcdef",
        "AGENTCTL_DATA_DIR": str(tmp_path / "data"),
        "AGENTCTL_PORT": "0",
    }
    env.pop("DATABASE_URL", None)
    agentctl = Path(sys.executable).parent / "agentctl"
    ended = subprocess.run(
        [str(agentctl), "serve"], env=env, capture_output=True, text=True, timeout=60
    )
    assert ended.returncode != 0
    assert "AGENTCTL_PRICES_FILE" in ended.stderr
    assert "'gpt-4o': name it provider:model" in ended.stderr
    assert "Traceback" not in ended.stderr


def test_a_run_is_priced_call_by_call_as_long_prompt_tiers_are() -> None:
    # claude-sonnet-4-5 costs more per token for a prompt past 200,000 tokens: two calls of
    # 150,000 each are two short prompts, not one long one.
    model = "anthropic:claude-sonnet-4-5"
    call = Tokens(input=150_000, output=1_000)
    one = Prices().cost(model, call)
    assert one is not None
    ledger = Ledger("run", "thread", "agent")
    ledger.count(model, Tokens(input=150_000, output=1_000))
    first = Prices().priced_usage(ledger)
    assert first is not None
    assert first["cost_usd"] == pytest.approx(one)
    ledger.count(model, Tokens(input=150_000, output=1_000))
    both = Prices().priced_usage(ledger)
    assert both is not None
    assert both["cost_usd"] == pytest.approx(2 * one)
    assert both["models"][model]["cost_usd"] == pytest.approx(2 * one)
