"""Budgets and rate limits: what each user, and the agent as a whole, may spend.

An agent's `[budgets]` (agent.toml) and the operator's `AGENTCTL_BUDGET_*` settings name the
limits; where both set one, the stricter wins. Tokens (input + output, of every model call)
and costs (USD, of the priced models) count per UTC day; runs count over the last minute.

- Before a run is created, `BudgetChecker.admit` reads what the user and the agent spent
  today and how many runs they started in the last minute, and raises `BudgetExceeded`
  (429, with `Retry-After`) for a budget already spent. Nothing is read when no budget
  applies. Once the run is created, `BudgetChecker.started` notes its start.
- While a run executes, the guard of its ledger (`BudgetChecker.guard_for`) is awaited
  before each model call: when what was spent today (stored) plus what this run spent so
  far (its ledger) reaches a token or cost budget, it raises `BudgetExceeded` and the run
  ends there, its thread intact.
- `BudgetChecker.standing` is what `GET /usage/me` shows: each budget with its use and reset.

What is spent is stored when a run ends; the runs of a user in flight at once do not see each
other's spend until then. Reads of stored spend are kept `CACHE_SECONDS` by each process
(less near a limit, see `_fresh_enough`), and forgotten when a run of the same user ends here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from agentctl.errors import BudgetExceeded
from agentctl.metering.ledger import Guard, Ledger
from agentctl.project.model import BUDGET_KEYS, Budgets

Scope = Literal["user", "agent"]
Unit = Literal["tokens", "usd", "runs"]
Window = Literal["day", "minute"]

CONFIG_FILE = "agent.toml"
SETTING_PREFIX = "AGENTCTL_BUDGET_"
MINUTE = timedelta(seconds=60)
# How long a read of stored spend is used again (by run starts and model calls alike).
CACHE_SECONDS = 2.0
# Within this share of a limit, stored spend is read again for every check.
NEAR = 0.9
# Run starts are forgotten after this long, at most this often.
STARTS_KEPT = timedelta(minutes=5)
FORGET_EVERY = 60.0


def setting_name(key: str) -> str:
    """The operator's variable of a budget: AGENTCTL_BUDGET_USER_TOKENS_PER_DAY."""
    return SETTING_PREFIX + key.upper()


def operator_budgets(values: Mapping[str, Any]) -> Budgets:
    """The operator's budgets from `values`: each budget's setting (`setting_name`) or its
    `Settings` field (`budget_<key>`), None or absent for no limit."""
    found: dict[str, Any] = {}
    for key in BUDGET_KEYS:
        value = values.get(setting_name(key), values.get(f"budget_{key}"))
        if value is not None:
            found[key] = value
    return Budgets(**found)


@dataclass(frozen=True)
class Spend:
    """Tokens (input + output) and cost (USD, priced models only) spent."""

    tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.tokens + other.tokens, self.cost + other.cost)


class BudgetStore(Protocol):
    """What budgets read and write in the agent's storage."""

    async def spent(self, user_id: str | None, since: datetime) -> Spend:
        """What `user_id` (None: every user together) spent since `since` (stored runs)."""

    async def note_start(self, user_id: str | None, at: datetime) -> None: ...

    async def starts(self, since: datetime, *, user_id: str | None, limit: int) -> list[datetime]:
        """When runs started since `since` (only `user_id`'s, unless None), newest first."""

    async def forget_starts(self, before: datetime) -> int: ...


@dataclass(frozen=True)
class Budget:
    """One limit that applies, and who set it."""

    name: str  # a key of `[budgets]`: user_tokens_per_day
    limit: float
    source: str  # "agent.toml" or the operator's variable

    @property
    def scope(self) -> Scope:
        return "user" if self.name.startswith("user_") else "agent"

    @property
    def unit(self) -> Unit:
        kind = self.name.split("_")[1]
        return "tokens" if kind == "tokens" else "usd" if kind == "cost" else "runs"

    @property
    def window(self) -> Window:
        return "minute" if self.unit == "runs" else "day"

    @property
    def set_by(self) -> str:
        """How a message names where it is set."""
        if self.source == CONFIG_FILE:
            return f"{self.name} in {CONFIG_FILE}"
        return f"{self.name}, set by the operator's {self.source}"


def applying(agent: Budgets, operator: Budgets) -> tuple[Budget, ...]:
    """Every budget set by the agent or the operator, the stricter of the two when both."""
    found = []
    for key in BUDGET_KEYS:
        mine, theirs = getattr(agent, key), getattr(operator, key)
        if mine is None and theirs is None:
            continue
        if theirs is None or (mine is not None and mine <= theirs):
            found.append(Budget(key, mine, CONFIG_FILE))
        else:
            found.append(Budget(key, theirs, setting_name(key)))
    return tuple(found)


def day_start(at: datetime) -> datetime:
    """The UTC midnight beginning `at`'s day."""
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@dataclass(frozen=True)
class Standing:
    """A budget's use now, and when its window frees."""

    budget: Budget
    used: float
    resets_at: datetime
    at: datetime  # when the use was read
    who: str  # "user alice", "agent chat"

    @property
    def spent(self) -> bool:
        return self.used >= self.budget.limit

    @property
    def remaining(self) -> float:
        return max(0.0, self.budget.limit - self.used)

    @property
    def retry_after(self) -> int:
        return max(1, math.ceil((self.resets_at - self.at).total_seconds()))

    def as_json(self) -> dict[str, Any]:
        budget = self.budget
        number: Callable[[float], float] = (
            (lambda v: round(v, 6)) if budget.unit == "usd" else (lambda v: int(v))
        )
        return {
            "name": budget.name,
            "scope": budget.scope,
            "limit": number(budget.limit),
            "used": number(self.used),
            "remaining": number(self.remaining),
            "unit": budget.unit,
            "window": budget.window,
            "resets_at": self.resets_at.isoformat().replace("+00:00", "Z"),
            "set_by": "agent.toml" if budget.source == CONFIG_FILE else "operator",
        }

    def message(self) -> str:
        """What was spent, of which budget, and when it frees."""
        budget = self.budget
        if budget.unit == "runs":
            return (
                f"{self.who} has started {_count(self.used)} of {_count(budget.limit)} runs "
                f"allowed per minute ({budget.set_by}); retry in {self.retry_after} s"
            )
        if budget.unit == "usd":
            use = f"spent ${self.used:,.2f} of ${budget.limit:,.2f}"
        else:
            use = f"used {_count(self.used)} of {_count(budget.limit)} tokens"
        return f"{self.who} has {use} today ({budget.set_by}); it resets at 00:00 UTC"

    def refusal(self) -> BudgetExceeded:
        return BudgetExceeded(self.message(), budget=self.budget.name,
                              retry_after=self.retry_after)  # fmt: skip


def _count(value: float) -> str:
    return f"{int(value):,}"


def _who(scope: Scope, user_id: str | None, agent: str) -> str:
    return f"user {user_id}" if scope == "user" else f"agent {agent}"


@dataclass
class _Read:
    spend: Spend
    at: float  # monotonic


@dataclass
class BudgetChecker:
    """The budgets of one agent's server: its storage's spend and starts, the operator's
    limits (`operator`), and `cost` pricing a ledger's spend so far (USD, priced models)."""

    store: BudgetStore
    operator: Budgets = field(default_factory=Budgets)
    cost: Callable[[Ledger], float] = lambda ledger: 0.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    _cache: dict[tuple[str | None, datetime], _Read] = field(default_factory=dict)
    _applying: dict[Budgets, tuple[Budget, ...]] = field(default_factory=dict)
    _forgot_at: float = 0.0

    def budgets(self, agent: Budgets) -> tuple[Budget, ...]:
        """The budgets that apply to an agent whose `[budgets]` is `agent`."""
        found = self._applying.get(agent)
        if found is None:
            found = self._applying[agent] = applying(agent, self.operator)
        return found

    # -- before a run is created ---------------------------------------------------------

    async def admit(self, agent: Budgets, name: str, user_id: str | None) -> None:
        """Raise `BudgetExceeded` when a budget of `user_id` (None: no user, whom only the
        agent's budgets hold) or of the agent `name` is spent. Reads nothing when no budget
        applies. The run, once created, is noted by `started`."""
        budgets = [b for b in self.budgets(agent) if user_id is not None or b.scope == "agent"]
        if not budgets:
            return
        at = self.clock()
        spent: list[Standing] = []
        for budget in budgets:
            if budget.window == "day":
                standing = await self._day_standing(budget, user_id, name, at, None)
            else:
                standing = await self._minute_standing(budget, user_id, name, at)
            if standing.spent:
                spent.append(standing)
        if spent:  # the one that frees last: retrying before then is refused again
            raise max(spent, key=lambda s: s.resets_at).refusal()

    async def started(self, agent: Budgets, user_id: str | None) -> None:
        """A run of `user_id` was created: noted when runs per minute are limited (a
        request refused before creating one counts nothing)."""
        if any(b.window == "minute" for b in self.budgets(agent)):
            at = self.clock()
            await self.store.note_start(user_id, at)
            await self._forget_old_starts(at)

    async def _minute_standing(
        self, budget: Budget, user_id: str | None, name: str, at: datetime
    ) -> Standing:
        limit = int(budget.limit)
        who = user_id if budget.scope == "user" else None
        starts = await self.store.starts(at - MINUTE, user_id=who, limit=limit)
        # Once the limit-th newest start leaves the window, one more run may start; below
        # the limit, the oldest start leaving it lowers the count.
        frees = starts[-1] + MINUTE if starts else at
        return Standing(budget, len(starts), frees, at, _who(budget.scope, user_id, name))

    async def _forget_old_starts(self, at: datetime) -> None:
        if time.monotonic() - self._forgot_at >= FORGET_EVERY:
            self._forgot_at = time.monotonic()
            await self.store.forget_starts(at - STARTS_KEPT)

    # -- stored spend ----------------------------------------------------------------------

    async def _day_standing(
        self, budget: Budget, user_id: str | None, name: str, at: datetime, ledger: Ledger | None
    ) -> Standing:
        who = user_id if budget.scope == "user" else None
        own = Spend()
        if ledger is not None:
            own = Spend(ledger.totals().total, self.cost(ledger))
        stored = await self._spent(who, at, budget, own)
        total = stored + own
        used = total.tokens if budget.unit == "tokens" else total.cost
        midnight = day_start(at) + timedelta(days=1)
        return Standing(budget, used, midnight, at, _who(budget.scope, user_id, name))

    async def _spent(self, who: str | None, at: datetime, budget: Budget, own: Spend) -> Spend:
        """What `who` spent today, stored: read again unless read lately and far enough
        from `budget`'s limit."""
        key = (who, day_start(at))
        read = self._cache.get(key)
        if read is not None and self._fresh_enough(read, budget, own):
            return read.spend
        spend = await self.store.spent(who, day_start(at))
        self._cache[key] = _Read(spend, time.monotonic())
        if len(self._cache) > 10_000:  # yesterday's and idle users' reads
            self._cache = {k: v for k, v in self._cache.items() if k[1] == key[1]}
        return spend

    @staticmethod
    def _fresh_enough(read: _Read, budget: Budget, own: Spend) -> bool:
        if time.monotonic() - read.at > CACHE_SECONDS:
            return False
        total = read.spend + own
        used = total.tokens if budget.unit == "tokens" else total.cost
        # Spend only grows within a day: a read that shows the budget spent still does.
        return used < NEAR * budget.limit or used >= budget.limit

    def forget(self, user_id: str | None) -> None:
        """A run of `user_id` ended here: its spend (and the agent's) is read again."""
        for key in [k for k in self._cache if k[0] is None or k[0] == user_id]:
            del self._cache[key]

    # -- while a run executes --------------------------------------------------------------

    def guard_for(self, agent: Budgets, name: str, user_id: str | None) -> Guard | None:
        """The guard of a run's ledger: raises `BudgetExceeded` before a model call once a
        token or cost budget is spent, counting what the run spent so far. None when no
        such budget applies."""
        budgets = [
            b
            for b in self.budgets(agent)
            if b.window == "day" and (user_id is not None or b.scope == "agent")
        ]
        if not budgets:
            return None

        async def guard(ledger: Ledger) -> None:
            at = self.clock()
            for budget in budgets:
                standing = await self._day_standing(budget, user_id, name, at, ledger)
                if standing.spent:
                    raise BudgetExceeded(
                        f"the run stopped before its next model call: {standing.message()} "
                        "— the thread keeps everything up to here; continue it then, or "
                        "once the budget is raised",
                        budget=budget.name,
                        retry_after=standing.retry_after,
                    )

        return guard

    # -- what a user sees ------------------------------------------------------------------

    async def standing(self, agent: Budgets, name: str, user_id: str | None) -> list[Standing]:
        """Every budget that applies to `user_id` (None: the agent's alone), with its use."""
        at = self.clock()
        found = []
        for budget in self.budgets(agent):
            if budget.scope == "user" and user_id is None:
                continue
            if budget.window == "day":
                found.append(await self._day_standing(budget, user_id, name, at, None))
            else:
                found.append(await self._minute_standing(budget, user_id, name, at))
        return found
