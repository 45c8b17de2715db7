"""What runs spent, as the usage API answers it: sums per day, user, model or thread (and,
on a platform, per agent) over a span of days, with the total and the models no price is
known for. A signed-in user sees their own usage only; the deployment key sees everyone's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agentctl.errors import Forbidden, Unprocessable
from agentctl.metering.ledger import Tokens
from agentctl.server.access import Caller
from agentctl.storage.base import Storage, UsageGroup, UsageRow

DEFAULT_DAYS = 30  # the span when `since` is not given: the last 30 days, today included
MAX_DAYS = 366 * 5  # a span past this is refused (every day summed would be read)


@dataclass(frozen=True)
class UsageQuery:
    since: date
    until: date
    user_id: str | None = None
    thread_id: str | None = None


def usage_query(
    caller: Caller,
    since: date | None,
    until: date | None,
    user_id: str | None = None,
    thread_id: str | None = None,
) -> UsageQuery:
    """The span (default: the last `DEFAULT_DAYS` days, UTC) and filters of a usage request;
    a signed-in user's are narrowed to their own usage (403 for another user's)."""
    until = until or datetime.now(UTC).date()
    if since is None:  # from the calendar's first day, for an `until` in its first days
        since = until - min(timedelta(days=DEFAULT_DAYS - 1), until - date.min)
    if since > until:
        raise Unprocessable(f"since ({since}) is after until ({until}) — send since <= until")
    if (until - since).days >= MAX_DAYS:
        raise Unprocessable(f"since to until spans more than {MAX_DAYS} days — ask for less")
    if caller.scoped:
        if user_id is not None and user_id != caller.user:
            raise Forbidden("a signed-in user sees their own usage only — leave user_id out")
        user_id = caller.user
    return UsageQuery(since, until, user_id or None, thread_id or None)


async def summary(
    storage: Storage, group_by: UsageGroup | None, query: UsageQuery
) -> tuple[list[UsageRow], UsageRow | None]:
    """The rows of `group_by` and the total (None when nothing was spent)."""
    usage = storage.usage
    where = {"user_id": query.user_id, "thread_id": query.thread_id}
    rows = await usage.summary(group_by, query.since, query.until, **where)
    total = (
        rows if group_by is None else await usage.summary(None, query.since, query.until, **where)
    )
    return rows, (total[0] if total else None)


def merged(rows: Iterable[UsageRow]) -> list[UsageRow]:
    """Rows of several storages (a platform's agents) summed per key, in key order."""
    by_key: dict[str | None, UsageRow] = {}
    for row in rows:
        found = by_key.get(row.key)
        if found is None:
            by_key[row.key] = UsageRow(row.key, Tokens(), None, 0)
            found = by_key[row.key]
        found.tokens.add(row.tokens)
        if row.cost_usd is not None:
            found.cost_usd = (found.cost_usd or 0.0) + row.cost_usd
        found.runs += row.runs
        found.unpriced_models = tuple(sorted({*found.unpriced_models, *row.unpriced_models}))
    return [by_key[key] for key in sorted(by_key, key=lambda key: (key is not None, key or ""))]


def merged_total(rows: list[UsageRow]) -> UsageRow | None:
    """The one row summing `rows` (None when there are none), as a total."""
    for row in merged(
        UsageRow(None, r.tokens, r.cost_usd, r.runs, r.unpriced_models) for r in rows
    ):
        return row
    return None


def usage_answer(
    group_by: str | None, query: UsageQuery, rows: list[UsageRow], total: UsageRow | None
) -> dict[str, Any]:
    """The body of `GET /usage` (and `/platform/usage`)."""
    empty = UsageRow(None, Tokens(), None, 0)
    shown_total = (total or empty).as_json()
    del shown_total["key"]
    unpriced = shown_total.pop("unpriced_models")
    return {
        "group_by": group_by,
        "since": query.since.isoformat(),
        "until": query.until.isoformat(),
        "user_id": query.user_id,
        "thread_id": query.thread_id,
        "rows": [_row(row) for row in rows],
        "total": shown_total,
        "unpriced_models": unpriced,
    }


def _row(row: UsageRow) -> dict[str, Any]:
    shown = row.as_json()
    if not shown["unpriced_models"]:
        del shown["unpriced_models"]
    return shown


def by_agent(totals: Mapping[str, UsageRow | None]) -> list[UsageRow]:
    """Each agent's total as a row keyed by its name (agents that spent nothing left out)."""
    return [
        UsageRow(name, row.tokens, row.cost_usd, row.runs, row.unpriced_models)
        for name, row in sorted(totals.items())
        if row is not None
    ]
