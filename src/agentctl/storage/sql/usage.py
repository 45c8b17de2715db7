"""What runs spent, for either database: the rows a run's end writes with it (its usage per
model in `usage`, its trace in `run_traces`) and the sums the usage API reads.

A usage row is priced when it is stored (`metering.prices`): a later change of prices does
not rewrite what was spent. Rows are kept when their run or thread is deleted; traces go
with their run."""

from __future__ import annotations

import builtins
from datetime import date, datetime
from typing import Any

from agentctl.metering import prices
from agentctl.metering.ledger import Ledger, Tokens
from agentctl.storage.base import UsageGroup, UsageRow
from agentctl.storage.sql.dialect import Dialect, Query, json_text, json_value
from agentctl.storage.sql.table import Table

# The column each grouping reads (None: one row of everything).
GROUPS: dict[str, str] = {"day": "day", "user": "user_id", "model": "model", "thread": "thread_id"}
_SUMS = (
    "SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens), SUM(model_calls), "
    "SUM(cost_usd), COUNT(DISTINCT run_id)"
)
_UPSERTED = ("input_tokens", "output_tokens", "cached_tokens", "model_calls", "cost_usd", "at")


class UsageSql:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = d = dialect
        p = d.param
        updated = ", ".join(f"{name} = excluded.{name}" for name in (*_UPSERTED, "day"))
        # The run's thread and assistant are read from its row (written just before).
        self.insert = (
            "INSERT INTO usage (run_id, model, thread_id, assistant_id, agent, user_id, day, at, "
            "input_tokens, output_tokens, cached_tokens, model_calls, cost_usd) "
            f"SELECT run_id, {p}, thread_id, assistant_id, {p}, {p}, {p}, {p}, "
            f"{p}, {p}, {p}, {p}, {p} FROM runs WHERE run_id = {p} "
            f"ON CONFLICT (run_id, model) DO UPDATE SET {updated}"
        )
        self.put_trace = (
            f"INSERT INTO run_traces (run_id, thread_id, trace) SELECT run_id, thread_id, {p} "
            f"FROM runs WHERE run_id = {p} "
            "ON CONFLICT (run_id) DO UPDATE SET trace = excluded.trace"
        )
        self.get_trace = f"SELECT trace FROM run_traces WHERE run_id = {p}"
        self.delete_trace = f"DELETE FROM run_traces WHERE run_id = {p}"
        self.delete_traces = f"DELETE FROM run_traces WHERE thread_id = {p}"

    def written(self, ledger: Ledger, at: datetime) -> tuple[dict[str, Any] | None, list[Query]]:
        """The run's `usage` (priced) and the statements storing its usage rows and trace,
        as of `at` (the run's end)."""
        d, usage = self.dialect, prices.priced_usage(ledger)
        costs = {} if usage is None else usage["models"]
        day, stamp = at.date().isoformat(), d.time(at)
        queries = []
        for model, tokens in sorted(ledger.by_model.items()):
            counts = (tokens.input, tokens.output, tokens.cached, tokens.calls)
            cost = costs[model]["cost_usd"]
            params = (model, ledger.agent, ledger.user_id, day, stamp, *counts, cost, ledger.run_id)
            queries.append(Query(self.insert, params))
        queries.append(Query(self.put_trace, (json_text(ledger.trace_json()), ledger.run_id)))
        return usage, queries

    def where(
        self,
        since: date | None,
        until: date | None,
        user_id: str | None,
        thread_id: str | None,
        at: datetime | None = None,
    ) -> tuple[str, list[Any]]:
        p, clauses, params = self.dialect.param, ["1 = 1"], list[Any]()
        for column, op, value in (
            ("day", ">=", None if since is None else since.isoformat()),
            ("day", "<=", None if until is None else until.isoformat()),
            ("user_id", "=", user_id),
            ("thread_id", "=", thread_id),
            ("at", ">=", None if at is None else self.dialect.time(at)),
        ):
            if value is not None:
                clauses.append(f"{column} {op} {p}")
                params.append(value)
        return " AND ".join(clauses), params


class SqlUsageStore(Table):
    """The `UsageStore` both SQL backends share."""

    sql: UsageSql

    async def summary(
        self,
        group_by: UsageGroup | None,
        since: date,
        until: date,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
    ) -> builtins.list[UsageRow]:
        where, params = self.sql.where(since, until, user_id, thread_id)
        key = "NULL" if group_by is None else GROUPS[group_by]
        order = self.sql.dialect.order(key, "asc", text=True)
        grouped = "" if group_by is None else f" GROUP BY {key} ORDER BY {order}"
        found = await self.rows(f"SELECT {key}, {_SUMS} FROM usage WHERE {where}{grouped}", params)
        unpriced: dict[Any, set[str]] = {}
        by = "model" if group_by is None else f"{key}, model"
        for row_key, model in await self.rows(
            f"SELECT {key}, model FROM usage WHERE {where} AND cost_usd IS NULL GROUP BY {by}",
            params,
        ):
            unpriced.setdefault(row_key, set()).add(model)
        return [
            UsageRow(
                key=None if row[0] is None else str(row[0]),
                tokens=Tokens(*(int(value) for value in row[1:5])),
                cost_usd=None if row[5] is None else float(row[5]),
                runs=int(row[6]),
                unpriced_models=tuple(sorted(unpriced.get(row[0], ()))),
            )
            for row in found
            if row[6]  # the one row of an empty table's sums
        ]

    async def spent_on_budgets(self, user_id: str | None, since: datetime) -> tuple[int, float]:
        where, params = self.sql.where(None, None, user_id, None, at=since)
        sums = "SUM(input_tokens) + SUM(output_tokens), SUM(cost_usd)"
        row = await self.row(f"SELECT {sums} FROM usage WHERE {where}", params)
        if row is None or row[0] is None:
            return 0, 0.0
        return int(row[0]), float(row[1] or 0.0)

    async def trace(self, run_id: str) -> dict[str, Any] | None:
        row = await self.row(self.sql.get_trace, (run_id,))
        return None if row is None else dict(json_value(row[0]))
