"""What the running revision tells its agent: the shared instructions, skills, subagents and
where the caller's own memory file lives. Only the files the agent reads as instructions are
shown — never `.env`, `mcp.json` or any other file of the project."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.project.model import Project, Skill
from agentctl.project.skills import SKILL_FILE
from agentctl.runtime.memory import USER_MEMORY_FILE, USER_MEMORY_KEY
from agentctl.runtime.namespaces import user_namespace
from agentctl.server import views
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.schemas import AgentOut

router = APIRouter(tags=["agent"])


@router.get("/agent", response_model=AgentOut)
async def get_agent(request: Request) -> Response:
    """The agent of the running revision, for any admitted caller: its instructions
    (AGENTS.md), skills (with their SKILL.md), subagents and, when the agent keeps per-user
    memory, the template a user's `/memories/user/AGENTS.md` starts from and the store
    namespace that holds the caller's (null for a caller who is not a signed-in user)."""
    server = server_of(request)
    runtime = server.deployment.runtime  # 503 before the first deploy
    project = runtime.project
    user = caller_of(request).user
    user_memory = None
    if project.user_template is not None:
        user_memory = {
            "path": USER_MEMORY_FILE,
            "template": project.user_template,
            "namespace": list(user_namespace(project.name, user)) if user else None,
            "key": USER_MEMORY_KEY,
        }
    return views.json_response(
        {
            "name": project.name,
            "revision": runtime.revision_id,
            "instructions": project.instructions,
            "skills": [_skill(project, skill) for skill in project.skills],
            "subagents": [
                {
                    "name": sub.name,
                    "description": sub.description,
                    "instructions": sub.instructions,
                    "skills": [_skill(project, skill) for skill in sub.skills],
                }
                for sub in project.subagents
            ],
            "user_memory": user_memory,
        }
    )


def _skill(project: Project, skill: Skill) -> dict[str, Any]:
    content = project.contents.get(f"{skill.path}/{SKILL_FILE}", b"")
    return {
        "name": skill.name,
        "description": skill.description,
        "content": content.decode("utf-8", errors="replace"),
    }
