"""The agent a server serves: the loaded revision, and the ids it answers to."""

from __future__ import annotations

import functools
import uuid

from agentctl.errors import NotDeployed
from agentctl.runtime.agent import AgentRuntime

# The namespace the LangGraph API uses to give a graph a stable assistant id.
ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


@functools.lru_cache(maxsize=64)  # asked on every request naming an assistant by its graph
def assistant_uuid(graph_id: str) -> str:
    return str(uuid.uuid5(ASSISTANT_NAMESPACE, graph_id))


class Deployment:
    """The current revision (none on a production server before its first deploy). A run
    keeps the revision it started on; `swap` only changes what new runs get."""

    def __init__(self, runtime: AgentRuntime | None, number: int | None = None) -> None:
        self._runtime = runtime
        # The revision's deployment number on a production server (None under `dev`).
        self.number = number

    @property
    def ready(self) -> bool:
        return self._runtime is not None

    @property
    def runtime(self) -> AgentRuntime:
        if self._runtime is None:
            raise NotDeployed()
        return self._runtime

    @property
    def graph_id(self) -> str:
        return self.runtime.name

    @property
    def assistant_id(self) -> str:
        return assistant_uuid(self.graph_id)

    @property
    def revision_id(self) -> str:
        return self.runtime.revision_id

    def swap(self, runtime: AgentRuntime, number: int | None = None) -> None:
        self._runtime, self.number = runtime, number
