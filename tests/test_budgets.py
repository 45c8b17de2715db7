"""The rules of budgets (`metering/budgets.py`) as pure functions: which limit holds, how a
budget's use is told, when its window frees; and `[budgets]` as agent.toml writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentctl.metering.budgets import (
    Budget,
    Standing,
    applying,
    day_start,
    operator_budgets,
)
from agentctl.project import load_project
from agentctl.project.model import Budgets
from agentctl.settings import Settings

AT = datetime(2026, 11, 27, 15, 30, 0, tzinfo=UTC)


def test_the_stricter_limit_holds_and_says_who_set_it() -> None:
    agent = Budgets(user_tokens_per_day=10_000, user_runs_per_minute=5, agent_cost_per_day=9.5)
    operator = Budgets(user_tokens_per_day=20_000, user_runs_per_minute=2, agent_tokens_per_day=7)
    found = {b.name: (b.limit, b.source) for b in applying(agent, operator)}
    assert found == {
        "user_tokens_per_day": (10_000, "agent.toml"),
        "user_runs_per_minute": (2, "AGENTCTL_BUDGET_USER_RUNS_PER_MINUTE"),
        "agent_tokens_per_day": (7, "AGENTCTL_BUDGET_AGENT_TOKENS_PER_DAY"),
        "agent_cost_per_day": (9.5, "agent.toml"),
    }
    assert applying(Budgets(), Budgets()) == ()


def test_the_operator_settings_read_as_budgets() -> None:
    settings = Settings.from_env(
        {"AGENTCTL_BUDGET_USER_COST_PER_DAY": "2.5", "AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE": "30"}
    )
    assert operator_budgets(vars(settings)) == Budgets(
        user_cost_per_day=2.5, agent_runs_per_minute=30
    )
    assert operator_budgets({"AGENTCTL_BUDGET_USER_TOKENS_PER_DAY": 5}) == Budgets(
        user_tokens_per_day=5
    )


def test_a_spent_daily_budget_names_its_limit_use_and_reset() -> None:
    budget = Budget("user_tokens_per_day", 10_000, "agent.toml")
    midnight = day_start(AT) + timedelta(days=1)
    standing = Standing(budget, 10_312, midnight, AT, "user alice")
    assert standing.spent
    assert standing.message() == (
        "user alice has used 10,312 of 10,000 tokens today (user_tokens_per_day in "
        "agent.toml); it resets at 00:00 UTC"
    )
    refusal = standing.refusal()
    assert refusal.status == 429
    assert refusal.retry_after == 8 * 3600 + 30 * 60
    assert refusal.headers == {"Retry-After": "30600"}
    assert standing.as_json() == {
        "name": "user_tokens_per_day",
        "scope": "user",
        "limit": 10_000,
        "used": 10_312,
        "remaining": 0,
        "unit": "tokens",
        "window": "day",
        "resets_at": "2026-11-28T00:00:00Z",
        "set_by": "agent.toml",
    }


def test_costs_and_runs_are_told_in_their_units() -> None:
    cost = Budget("agent_cost_per_day", 5.0, "AGENTCTL_BUDGET_AGENT_COST_PER_DAY")
    standing = Standing(cost, 5.123, day_start(AT) + timedelta(days=1), AT, "agent chat")
    assert standing.message() == (
        "agent chat has spent $5.12 of $5.00 today (agent_cost_per_day, set by the "
        "operator's AGENTCTL_BUDGET_AGENT_COST_PER_DAY); it resets at 00:00 UTC"
    )
    runs = Budget("user_runs_per_minute", 3, "agent.toml")
    frees = AT + timedelta(seconds=41.2)
    standing = Standing(runs, 3, frees, AT, "user bob")
    assert standing.spent
    assert standing.retry_after == 42
    assert standing.message() == (
        "user bob has started 3 of 3 runs allowed per minute (user_runs_per_minute in "
        "agent.toml); retry in 42 s"
    )
    assert Standing(runs, 2, frees, AT, "user bob").as_json()["remaining"] == 1


def test_a_window_that_frees_now_still_asks_for_a_second() -> None:
    budget = Budget("agent_runs_per_minute", 1, "agent.toml")
    assert Standing(budget, 1, AT, AT, "agent chat").retry_after == 1


def test_budgets_load_from_agent_toml(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Hi.\n")
    (tmp_path / "agent.toml").write_text(
        '[agent]\nname = "chat"\n\n[budgets]\nuser_tokens_per_day = 200000\n'
        "user_cost_per_day = 5\nagent_cost_per_day = 0.25\nagent_runs_per_minute = 120\n"
    )
    project = load_project(tmp_path, environ={"OPENAI_API_KEY": "sk-test"})
    assert project.budgets == Budgets(
        user_tokens_per_day=200_000,
        user_cost_per_day=5,
        agent_cost_per_day=0.25,
        agent_runs_per_minute=120,
    )
