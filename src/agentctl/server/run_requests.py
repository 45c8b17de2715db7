"""What a client may ask of a run, checked, and turned into a `Run` record."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from agentctl.engine.wire import STREAM_MODES
from agentctl.server.access import without_owner
from agentctl.server.fields import Body, Config, Metadata, Seconds, StreamModes, unknown_names
from agentctl.storage.base import BY_OPERATOR, Run, new_id

# A run's own options, stored with it for the worker (everything else is the server's).
RUN_KWARGS = (
    "input",
    "command",
    "config",
    "context",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "interrupt_before",
    "interrupt_after",
    "checkpoint",
    "checkpoint_id",
    "durability",
    "after_seconds",
    "on_disconnect",
    "on_completion",
    "webhook",
    "feedback_keys",
    "strict_resume",
)


class CommandBody(Body):
    resume: Any = None
    update: Any = None
    goto: Any = None


class RunCreate(Body):
    """The body of every run-creating endpoint; unknown fields are ignored."""

    assistant_id: Annotated[str, Field(min_length=1)]
    input: Any = None
    command: CommandBody | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    stream_mode: StreamModes = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "enqueue"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: Seconds | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    webhook: str | None = None
    feedback_keys: list[str] | None = None
    # A resume answering an interrupt that is not waiting fails the run (else: is ignored).
    strict_resume: bool | None = None

    @field_validator("stream_mode")
    @classmethod
    def _known_modes(cls, value: str | list[str]) -> str | list[str]:
        modes = [value] if isinstance(value, str) else value
        problem = unknown_names("stream mode", modes, STREAM_MODES, use="one or more of")
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("feedback_keys")
    @classmethod
    def _no_feedback(cls, value: list[str] | None) -> list[str] | None:
        if value:
            raise ValueError(
                "feedback keys are LangSmith's, which agentctl does not send runs to — "
                "leave feedback_keys out"
            )
        return value

    @property
    def is_resume(self) -> bool:
        return self.command is not None and "resume" in self.command.model_fields_set

    def to_run(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        user: str | None,
        operator: bool = False,
        temporary: bool = False,
        stream_mode: list[str] | None = None,
        run_id: str | None = None,
    ) -> Run:
        """The run to submit; `user` is the authenticated user it executes as, `operator`
        whether the operator started it."""
        kwargs = self.model_dump(include=set(RUN_KWARGS), exclude_none=True)
        if user is not None:
            kwargs["user_id"] = user
        if operator:
            kwargs[BY_OPERATOR] = True
        if self.command is not None:
            kwargs["command"] = self.command.model_dump(exclude_unset=True)
        if stream_mode is not None:
            kwargs["stream_mode"] = stream_mode
        return Run(
            run_id=run_id or new_id(),
            thread_id=thread_id,
            assistant_id=assistant_id,
            metadata=without_owner(self.metadata),  # only the server names owners
            multitask_strategy=self.multitask_strategy,
            kwargs=kwargs,
            temporary=temporary,
        )


class CancelMany(Body):
    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None
