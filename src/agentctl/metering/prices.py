"""What model calls cost, in US dollars: from the `genai-prices` package's price table
(Pydantic's maintained snapshot of the providers' published prices, pinned with agentctl and
read offline), overridden by the operator's own prices file (`AGENTCTL_PRICES_FILE`).

A model is named as agent.toml names it, `provider:model` (agentctl's provider names, which
this maps to the table's). Cached tokens are part of the input tokens and are priced as
cache reads. A model neither source knows has no price (None): its usage is counted and
said to be unpriced, never guessed. Models served locally (`ollama:…`) are unpriced unless
the prices file gives them one (`["ollama:*"] input = 0` prices them all at zero).

The prices file, TOML (or JSON, by its suffix), in dollars per million tokens:

    ["openai:gpt-4o-mini"]
    input = 0.15
    output = 0.6
    cached = 0.075      # optional: the input price when missing

    ["ollama:*"]        # every model of a provider
    input = 0
    output = 0

Costs are computed when a run's usage is stored, each model call priced on its own (a
long prompt's tier is one call's): a later change of prices does not rewrite what was spent.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentctl.metering.ledger import Ledger, Tokens

log = logging.getLogger("agentctl.metering")

# The setting naming the operator's prices file (see agentctl.settings).
PRICES_FILE = "AGENTCTL_PRICES_FILE"
MILLION = 1_000_000

# agentctl's provider names (langchain's `init_chat_model` ones) → the price table's.
PROVIDERS: dict[str, str] = {
    "openai": "openai",
    "azure_openai": "azure",
    "anthropic": "anthropic",
    "anthropic_bedrock": "aws",
    "bedrock": "aws",
    "bedrock_converse": "aws",
    "google_genai": "google",
    "google_vertexai": "google",
    "google_anthropic_vertex": "anthropic",
    "mistralai": "mistral",
    "groq": "groq",
    "fireworks": "fireworks",
    "together": "together",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "xai": "x-ai",
    "perplexity": "perplexity",
    "openrouter": "openrouter",
}


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    cached: float

    def cost(self, tokens: Tokens) -> float:
        fresh = max(tokens.input - tokens.cached, 0)
        return (
            fresh * self.input + tokens.cached * self.cached + tokens.output * self.output
        ) / MILLION


class Prices:
    """The operator's prices (from its file, when given) over the package's table."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.overrides = dict(overrides or {})

    @classmethod
    def load(cls, path: str | Path | None) -> Prices:
        """The prices with the file at `path` (None: the table's alone). Raises ValueError
        saying what is wrong with the file."""
        if not path:
            return cls()
        return cls(read_file(Path(path)))

    def cost(self, model: str, tokens: Tokens) -> float | None:
        """What `tokens` of `model` (`provider:model`) cost in dollars; None when unknown."""
        provider, _, name = model.partition(":")
        price = self.overrides.get(model) or self.overrides.get(f"{provider}:*")
        if price is not None:
            return price.cost(tokens)
        if not name or provider not in PROVIDERS:
            return None
        return _table_cost(PROVIDERS[provider], name, tokens)

    def priced_usage(self, ledger: Ledger) -> dict[str, Any] | None:
        """The ledger's `usage_json()` with what it cost: `cost_usd` per model (None when
        unpriced) and in all (of the priced models; `unpriced_models` lists the others)."""
        usage = ledger.usage_json()
        if usage is None:
            return None
        total, unpriced = 0.0, []
        for model, entry in usage["models"].items():
            cost = self._cost_of_calls(ledger, model)
            entry["cost_usd"] = None if cost is None else round(cost, 10)
            if cost is None:
                unpriced.append(model)
            else:
                total += cost
        usage["cost_usd"] = None if len(unpriced) == len(usage["models"]) else round(total, 10)
        if unpriced:
            usage["unpriced_models"] = unpriced
        return usage

    def _cost_of_calls(self, ledger: Ledger, model: str) -> float | None:
        """What the ledger's calls of `model` cost, each priced on its own (a long prompt's
        tier is one call's); the calls priced before are not priced again."""
        calls = ledger.calls.get(model)
        if not calls:  # a ledger filled with its sums alone
            return self.cost(model, ledger.by_model[model])
        done, total = ledger.priced.get(model, (0, 0.0))
        if total is not None:
            for tokens in calls[done:]:
                cost = self.cost(model, tokens)
                total = None if cost is None else total + cost
                if total is None:
                    break
        ledger.priced[model] = (len(calls), total)
        return total


def warm() -> None:
    """Load the package's table now (a quarter second, once per process): at start, not at
    the end of the first run, on the event loop."""
    _table_cost("openai", "gpt-4o-mini", Tokens())


def _table_cost(provider: str, name: str, tokens: Tokens) -> float | None:
    found = _table_model(provider, name)
    if found is None:
        return None
    from genai_prices import Usage

    table_provider, model = found
    usage = Usage(
        input_tokens=tokens.input, output_tokens=tokens.output, cache_read_tokens=tokens.cached
    )
    try:
        total = model.calc_price(usage, table_provider).total_price
    except Exception:  # the table's own failure: unpriced, never a run's end refused for it
        log.exception("pricing %s:%s failed; counted as unpriced", provider, name)
        return None
    return float(total) if isinstance(total, Decimal | int | float) else None


@functools.cache
def _table_model(provider: str, name: str) -> tuple[Any, Any] | None:
    """The table's provider and model for a name (looked up once: a search of its
    patterns), None when it has none."""
    from genai_prices import data_snapshot

    try:
        found: tuple[Any, Any] = data_snapshot.get_snapshot().find_provider_model(
            name, None, provider, None
        )
    except LookupError:
        return None
    except Exception:
        log.exception("looking %s:%s up in the price table failed; unpriced", provider, name)
        return None
    return found


def read_file(path: Path) -> dict[str, Price]:
    """The prices in the operator's file (TOML, or JSON when it ends in `.json`)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"{PRICES_FILE}: cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{PRICES_FILE}: {path} is not valid: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{PRICES_FILE}: {path} must map models to their prices")
    return {model: _price(path, model, entry) for model, entry in data.items()}


def _price(path: Path, model: str, entry: Any) -> Price:
    where = f"{PRICES_FILE}: {path}, model {model!r}"
    if ":" not in model:
        raise ValueError(f"{where}: name it provider:model (or provider:*)")
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a table of input, output and cached prices")
    unknown = sorted(set(entry) - {"input", "output", "cached"})
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (input, output, cached)")
    values: dict[str, float] = {}
    for key in ("input", "output", "cached"):
        value = entry.get(key, values.get("input") if key == "cached" else None)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: {key} must be a number of dollars per million tokens")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: {key} must be 0 or more")
        values[key] = float(value)
    return Price(values["input"], values["output"], values["cached"])


_current: Prices | None = None


def configure(path: str | Path | None) -> Prices:
    """Use the prices file at `path` from now on (None: the table's prices alone); raises
    ValueError when the file is wrong."""
    global _current
    _current = Prices.load(path)
    warm()
    return _current


def current() -> Prices:
    """The prices in use: as `configure`d, else with the file `AGENTCTL_PRICES_FILE` names
    (a wrong one is logged and left out: a run's end is never refused for it). Servers call
    it at start, off the event loop: the first call reads the file and the table."""
    global _current
    if _current is None:
        try:
            _current = Prices.load(os.environ.get(PRICES_FILE))
        except ValueError as exc:
            log.error("%s; using the package's prices alone", exc)
            _current = Prices()
        warm()
    return _current


def priced_usage(ledger: Ledger) -> dict[str, Any] | None:
    """The ledger's usage priced with the prices in use (`Prices.priced_usage`)."""
    return current().priced_usage(ledger)
