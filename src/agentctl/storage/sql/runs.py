"""The runs table's statements and rows, for either database. How a run is claimed is each
backend's own (row locks skipped on PostgreSQL, the one process on SQLite).

A run's writes are fenced (storage/fence.py): `fenced()` is true of the row exactly while
the attempt holds the run — a requeue clears its worker, a new claim raises its attempt."""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from agentctl.metering.ledger import Ledger
from agentctl.storage.base import ACTIVE_RUN_STATUSES, Run, RunStatus, now
from agentctl.storage.fence import Fence
from agentctl.storage.sql.dialect import Dialect, Query, Row
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable
from agentctl.storage.sql.usage import UsageSql

_COLUMNS = columns(
    "run_id, thread_id, assistant_id, status, metadata:json, multitask_strategy, kwargs:json, "
    "attempt, temporary:flag, not_before:time, created_at:time, updated_at:time, "
    "error:json_or_null, cancel_reason, usage:json_or_null"
)
COLUMNS = names(_COLUMNS)
# `status IN (...)` of the runs still to finish, as SQL.
ACTIVE = ", ".join(f"'{status}'" for status in ACTIVE_RUN_STATUSES)


def fenced(param: str, table: str = "runs") -> str:
    """SQL true of `table`'s row of a run while the fence's attempt holds it (parameters:
    `fence_params`)."""
    return f"{table}.run_id = {param} AND {table}.attempt = {param} AND {table}.worker = {param}"


def fence_params(fence: Fence) -> tuple[str, int, str]:
    return fence.run_id, fence.attempt, fence.worker


class RunSql(TableSql[Run]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, Run, _COLUMNS, "runs", "run_id")
        p = d.param
        oldest_first = f"ORDER BY created_at, {d.text('run_id')}"
        self.insert = f"INSERT INTO runs ({COLUMNS}, owner) VALUES ({d.params(len(_COLUMNS) + 1)})"
        self.active = (
            f"SELECT {COLUMNS} FROM runs WHERE thread_id = {p} AND status IN ({ACTIVE}) "
            f"{oldest_first}"
        )
        self.all_active = f"SELECT {COLUMNS} FROM runs WHERE status IN ({ACTIVE}) {oldest_first}"
        self.count_by_status = "SELECT status, COUNT(*) FROM runs GROUP BY status"
        self.renew = (
            f"UPDATE runs SET lease_expires_at = {d.lease_end} "
            f"WHERE status = 'running' AND worker = {p} RETURNING run_id, attempt"
        )
        self.holds = f"SELECT 1 FROM runs WHERE {fenced(p)}"
        self.extend = (
            f"UPDATE runs SET lease_expires_at = {d.lease_end} "
            f"WHERE {fenced(p)} AND status = 'running' RETURNING run_id"
        )
        self.cancel = (
            "UPDATE runs SET status = 'interrupted', cancel_reason = 'cancelled', "
            f"updated_at = {p} WHERE run_id = {p} AND status = 'pending'"
        )
        self.delete_pending = f"DELETE FROM runs WHERE run_id = {p} AND status = 'pending'"
        # A run's usage is set by the end of the attempt that spent it (kept when None).
        self.finish = (
            f"UPDATE runs SET status = {p}, error = {p}, usage = COALESCE({p}, usage), "
            f"updated_at = {p} WHERE "
        )
        self.set_status = (
            f"UPDATE runs SET status = {p}, cancel_reason = COALESCE({p}, cancel_reason), "
            f"usage = COALESCE({p}, usage), updated_at = {p} WHERE "
        )
        self.usage = UsageSql(dialect)
        self.note_start = f"INSERT INTO run_starts (user_id, started_at) VALUES ({p}, {p})"
        newest = f"ORDER BY started_at DESC LIMIT {p}"
        self.starts = f"SELECT started_at FROM run_starts WHERE started_at >= {p} {newest}"
        self.starts_of_user = (
            f"SELECT started_at FROM run_starts WHERE user_id = {p} AND started_at >= {p} {newest}"
        )
        self.forget_starts = f"DELETE FROM run_starts WHERE started_at < {p}"
        self.next_wakeup = (
            "SELECT MIN(not_before) FROM runs WHERE status = 'pending' AND not_before IS NOT NULL"
        )

    def which(self, run_id: str, fence: Fence | None) -> tuple[str, tuple[Any, ...]]:
        """The WHERE of a write to run `run_id`, fenced when `fence` is given."""
        if fence is None:
            return f"run_id = {self.dialect.param}", (run_id,)
        return fenced(self.dialect.param), fence_params(fence)

    def values(self, run: Run) -> Row:
        """The row `insert` stores: the run's columns, then whom it counts against."""
        return (*self.rows.values(run), run.owner)

    def of_thread(self, thread_id: str, status: RunStatus | None, limit: int, offset: int) -> Query:
        """The thread's runs (only those in `status`, when given), newest first."""
        p = self.dialect.param
        where, params = f"thread_id = {p}", [thread_id]
        if status is not None:
            where += f" AND status = {p}"
            params.append(status)
        return Query(
            f"SELECT {COLUMNS} FROM runs WHERE {where} "
            f"ORDER BY created_at DESC, {self.dialect.text('run_id')} DESC LIMIT {p} OFFSET {p}",
            (*params, limit, offset),
        )

    def requeue(self, where: str, *params: object) -> Query:
        """The statement `SqlRunStore.requeue` runs."""
        return Query(
            "UPDATE runs SET status = 'pending', worker = NULL, lease_expires_at = NULL, "
            f"updated_at = {self.dialect.param} WHERE status = 'running' AND {where} "
            f"RETURNING {COLUMNS}",
            (self.dialect.time(now()), *params),
        )


class SqlRunStore(RecordTable[Run]):
    """The `RunStore` methods both SQL backends share; each adds how runs are claimed and
    which runs are orphans."""

    sql: RunSql

    async def create(self, run: Run) -> None:
        await self.write(self.sql.insert, self.sql.values(run), durable=True)

    async def renew(self, worker: str, lease: float) -> dict[str, int]:
        until = self.sql.dialect.lease_param(lease)
        return dict(await self.write_rows(self.sql.renew, (until, worker)))

    async def extend(self, fence: Fence) -> bool:
        params = (self.sql.dialect.lease_param(fence.lease), *fence_params(fence))
        return bool(await self.write_rows(self.sql.extend, params))

    async def release(self, worker: str, *, run_id: str | None = None) -> builtins.list[Run]:
        p = self.sql.dialect.param
        if run_id is not None:
            return await self.requeue(f"worker = {p} AND run_id = {p}", worker, run_id)
        return await self.requeue(f"worker = {p}", worker)

    async def requeue(self, where: str, *params: object) -> builtins.list[Run]:
        """Running runs matching `where` become pending, with no worker and no lease;
        returns them, oldest first."""
        query = self.sql.requeue(where, *params)
        rows = await self.write_rows(query.sql, query.params)
        return sorted(map(self.sql.record, rows), key=lambda run: (run.created_at, run.run_id))

    async def cancel_pending(self, run_id: str, *, delete: bool) -> bool:
        # One statement, re-checked against a claim that updated the row first.
        if delete:
            return await self.write(self.sql.delete_pending, (run_id,)) == 1
        return await self.write(self.sql.cancel, (self.sql.dialect.time(now()), run_id)) == 1

    async def finish(
        self,
        run_id: str,
        status: RunStatus,
        *,
        error: dict[str, Any] | None = None,
        fence: Fence | None = None,
        usage: Ledger | None = None,
    ) -> None:
        d, at = self.sql.dialect, now()
        where, ids = self.sql.which(run_id, fence)
        error_ = None if error is None else d.json(error)
        await self._ended(fence, usage, at, self.sql.finish + where, (status, error_), ids)

    async def set_status(
        self,
        run_id: str,
        status: RunStatus,
        reason: str | None = None,
        *,
        fence: Fence | None = None,
        usage: Ledger | None = None,
    ) -> None:
        where, ids = self.sql.which(run_id, fence)
        await self._ended(fence, usage, now(), self.sql.set_status + where, (status, reason), ids)

    async def _ended(
        self,
        fence: Fence | None,
        ledger: Ledger | None,
        at: datetime,
        update: str,
        params: tuple[Any, ...],
        ids: tuple[Any, ...],
    ) -> None:
        """Write the run's end (`update`, its `params`, then the usage and time, then the
        `ids` of its WHERE); with a ledger, in the same transaction, its usage rows and trace."""
        d = self.sql.dialect
        if ledger is None:
            await self._fenced(fence, update, (*params, None, d.time(at), *ids))
            return
        usage, rows = self.sql.usage.written(ledger, at)
        usage_ = None if usage is None else d.json(usage)
        first = Query(update, (*params, usage_, d.time(at), *ids))
        changed = await self.write_all([first, *rows], appends=False) == 1
        if fence is not None and not changed:
            raise fence.refused()

    async def delete(self, run_id: str, *, fence: Fence | None = None) -> bool:
        where, ids = self.sql.which(run_id, fence)
        delete = Query(f"DELETE FROM runs WHERE {where}", ids)
        trace = Query(self.sql.usage.delete_trace, (run_id,))
        changed = await self.write_all([delete, trace], appends=False)
        if fence is not None and not changed:
            raise fence.refused()
        return changed == 1

    async def _fenced(self, fence: Fence | None, query: str, params: tuple[Any, ...]) -> bool:
        """Run a write of one run; a fenced one that changes nothing was refused."""
        changed = await self.write(query, params, appends=False) == 1
        if fence is not None and not changed:
            raise fence.refused()
        return changed

    async def get(self, run_id: str) -> Run | None:
        return await self.one(self.sql.get, (run_id,))

    async def list(
        self, thread_id: str, *, status: RunStatus | None, limit: int, offset: int
    ) -> builtins.list[Run]:
        query = self.sql.of_thread(thread_id, status, limit, offset)
        return [self.sql.record(row) for row in await self.rows(query.sql, query.params)]

    async def active(self, thread_id: str) -> builtins.list[Run]:
        return [self.sql.record(row) for row in await self.rows(self.sql.active, (thread_id,))]

    async def count_by_status(self) -> dict[str, int]:
        return dict(await self.rows(self.sql.count_by_status))

    async def all_active(self) -> builtins.list[Run]:
        return [self.sql.record(row) for row in await self.rows(self.sql.all_active)]

    async def next_wakeup(self) -> datetime | None:
        row = await self.row(self.sql.next_wakeup)
        return None if row is None else self.sql.dialect.from_time(row[0])

    async def note_start(self, user_id: str | None, at: datetime) -> None:
        await self.write(self.sql.note_start, (user_id, self.sql.dialect.time(at)), appends=False)

    async def starts(
        self, since: datetime, *, user_id: str | None = None, limit: int
    ) -> builtins.list[datetime]:
        d = self.sql.dialect
        if user_id is None:
            rows = await self.rows(self.sql.starts, (d.time(since), limit))
        else:
            rows = await self.rows(self.sql.starts_of_user, (user_id, d.time(since), limit))
        return [at for (value,) in rows if (at := d.from_time(value)) is not None]

    async def forget_starts(self, before: datetime) -> int:
        return await self.write(self.sql.forget_starts, (self.sql.dialect.time(before),),
                                appends=False)  # fmt: skip
