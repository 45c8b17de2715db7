"""The ledger of one run's attempt: tokens per model and the tree of its steps.

The engine opens a `Ledger` for each attempt it executes and binds it to `current` (the
run's own task context, so its subagents and tools see it); the runtime's middleware counts
each model call's tokens (from the provider's own usage data) and opens a `Step` for each
model call, tool call, subagent and MCP call, nested under the step that was open when it
began (`current_step`). When the attempt ends, the engine stores `usage_json()` and
`trace_json()` with the run.

Model names are as agent.toml declares them (``provider:model``). Cached tokens are part of
the input tokens (what the provider read from its prompt cache).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

StepKind = Literal["model", "tool", "subagent", "mcp"]

# A run that takes more steps than this keeps counting its tokens, but records no more
# steps (its trace says it was cut).
MAX_STEPS = 2000


@dataclass(slots=True)
class Tokens:
    """Token counts of one or more model calls."""

    input: int = 0
    output: int = 0
    cached: int = 0  # of `input`
    calls: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output

    def add(self, other: Tokens) -> None:
        self.input += other.input
        self.output += other.output
        self.cached += other.cached
        self.calls += other.calls

    def as_json(self) -> dict[str, int]:
        return {
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cached_tokens": self.cached,
            "total_tokens": self.total,
            "model_calls": self.calls,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tokens:
        return cls(
            int(data.get("input_tokens") or 0),
            int(data.get("output_tokens") or 0),
            int(data.get("cached_tokens") or 0),
            int(data.get("model_calls") or 0),
        )


@dataclass(slots=True)
class Step:
    """One model call, tool call, subagent (`task`) or MCP call of a run."""

    id: int
    parent_id: int | None
    kind: StepKind
    name: str  # the model (provider:model), the tool, the subagent, or "server/tool"
    started_ms: float  # since the attempt began
    duration_ms: float | None = None  # None while it runs
    model: str | None = None
    tokens: Tokens | None = None
    finish_reason: str | None = None
    error: str | None = None  # the exception's type, when it failed

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "parent_id": self.parent_id,
            "kind": self.kind,
            "name": self.name,
            "started_ms": round(self.started_ms, 3),
            "duration_ms": None if self.duration_ms is None else round(self.duration_ms, 3),
        }
        if self.model is not None:
            data["model"] = self.model
        if self.tokens is not None:
            data.update(self.tokens.as_json())
        if self.finish_reason is not None:
            data["finish_reason"] = self.finish_reason
        if self.error is not None:
            data["error"] = self.error
        return data


Guard = Callable[["Ledger"], Awaitable[None]]


@dataclass(eq=False)
class Ledger:
    """What one attempt of a run spent and did."""

    run_id: str
    thread_id: str
    agent: str
    user_id: str | None = None
    # Awaited before each model call: raises to stop the run (a budget it crossed).
    guard: Guard | None = None
    started_at: float = field(default_factory=time.time)  # epoch seconds
    by_model: dict[str, Tokens] = field(default_factory=dict)
    # Each call's tokens, per model: a price may depend on one call's size (a long prompt's
    # tier), so a run is priced call by call (`metering.prices`, which keeps in `priced`
    # how many calls of each model it priced so far, and their cost).
    calls: dict[str, list[Tokens]] = field(default_factory=dict)
    priced: dict[str, tuple[int, float | None]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    truncated: bool = False
    _t0: float = field(default_factory=time.perf_counter)
    _next_id: int = 1

    def totals(self) -> Tokens:
        total = Tokens()
        for tokens in self.by_model.values():
            total.add(tokens)
        return total

    def count(self, model: str, tokens: Tokens, step: Step | None = None) -> None:
        """Add one model call's tokens (`tokens.calls` is set to 1 if 0)."""
        if not tokens.calls:
            tokens.calls = 1
        self.by_model.setdefault(model, Tokens()).add(tokens)
        self.calls.setdefault(model, []).append(
            Tokens(tokens.input, tokens.output, tokens.cached, tokens.calls)
        )
        if step is not None:
            step.tokens = tokens
            step.model = model

    async def before_model_call(self) -> None:
        if self.guard is not None:
            await self.guard(self)

    def open(self, kind: StepKind, name: str) -> Step | None:
        """A step beginning now under the open one (`current_step`); None past MAX_STEPS."""
        if len(self.steps) >= MAX_STEPS:
            self.truncated = True
            return None
        step = Step(self._next_id, current_step.get(), kind, name, self.elapsed_ms())
        self._next_id += 1
        self.steps.append(step)
        return step

    def close(self, step: Step | None, error: BaseException | None = None) -> None:
        if step is None:
            return
        step.duration_ms = self.elapsed_ms() - step.started_ms
        if error is not None:
            step.error = type(error).__name__

    @contextmanager
    def step(
        self, kind: StepKind, name: str, pauses: tuple[type[BaseException], ...] = ()
    ) -> Iterator[Step | None]:
        """A step around a block; steps opened inside it are its children. An exception of
        `pauses` (one that pauses the run, not a failure) ends the step without an error."""
        step = self.open(kind, name)
        token = current_step.set(step.id) if step is not None else None
        try:
            yield step
        except pauses:
            self.close(step)
            raise
        except BaseException as exc:
            self.close(step, exc)
            raise
        else:
            self.close(step)
        finally:
            if token is not None:
                current_step.reset(token)

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1000

    def usage_json(self) -> dict[str, Any] | None:
        """The run's `usage` (None when it called no model): totals and per model."""
        if not self.by_model:
            return None
        return {
            **self.totals().as_json(),
            "models": {model: tokens.as_json() for model, tokens in sorted(self.by_model.items())},
        }

    def trace_json(self) -> dict[str, Any]:
        """The run's steps, as `GET .../runs/{run_id}/trace` answers them."""
        return {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "duration_ms": round(self.elapsed_ms(), 3),
            "truncated": self.truncated,
            "steps": [step.as_json() for step in self.steps],
        }


current: ContextVar[Ledger | None] = ContextVar("agentctl_ledger", default=None)
current_step: ContextVar[int | None] = ContextVar("agentctl_ledger_step", default=None)
