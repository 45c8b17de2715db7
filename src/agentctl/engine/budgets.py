"""The budgets of the agent a run engine serves, on its storage (`metering/budgets.py` holds
the rules; this module gives them what they read and write)."""

from __future__ import annotations

from datetime import datetime

from agentctl.metering import prices
from agentctl.metering.budgets import BudgetChecker, Spend
from agentctl.metering.ledger import Ledger
from agentctl.project.model import Budgets
from agentctl.storage.base import Storage


class StoredSpend:
    """`BudgetStore` on the agent's storage: its usage rows and run starts."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def spent(self, user_id: str | None, since: datetime) -> Spend:
        tokens, cost = await self.storage.usage.spent_on_budgets(user_id, since)
        return Spend(tokens, cost)

    async def note_start(self, user_id: str | None, at: datetime) -> None:
        await self.storage.runs.note_start(user_id, at)

    async def starts(self, since: datetime, *, user_id: str | None, limit: int) -> list[datetime]:
        return await self.storage.runs.starts(since, user_id=user_id, limit=limit)

    async def forget_starts(self, before: datetime) -> int:
        return await self.storage.runs.forget_starts(before)


def ledger_cost(ledger: Ledger) -> float:
    """What a run spent so far in USD, of its priced models."""
    usage = prices.priced_usage(ledger)
    return float((usage or {}).get("cost_usd") or 0.0)


def budget_checker(storage: Storage, operator: Budgets | None = None) -> BudgetChecker:
    return BudgetChecker(StoredSpend(storage), operator or Budgets(), cost=ledger_cost)
