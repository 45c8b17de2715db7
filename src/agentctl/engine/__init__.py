"""Runs: the queue, the workers, multitask strategies, cancellation, retries with `attempt`,
and the event log that makes every stream resumable."""

from agentctl.engine.deployment import Deployment, assistant_uuid
from agentctl.engine.engine import RunEngine

__all__ = ["Deployment", "RunEngine", "assistant_uuid"]
