"""The platform's own routes, at its root: its agents (list, delete), deploys to the agent a
revision names, each agent's revisions and rollback, and the platform's `/ok`, `/info` and
`/metrics`. The deployment key (`x-api-key`) only, but for `/ok` and `/info`."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import date
from typing import Annotated, Any, Literal

import httpx
from fastapi import APIRouter, Query, Request
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import PlainTextResponse, Response

from agentctl._version import __version__
from agentctl.bundle.limits import RevisionLimits
from agentctl.errors import AgentctlError, Forbidden, NotDeployed, NotFound, RevisionRefused
from agentctl.observability.metrics import join_by_agent
from agentctl.platform.deployments import Deployments, verify_archive
from agentctl.server.access import AccessPolicy, caller_of
from agentctl.server.fields import Limit, Offset, RevisionNumber
from agentctl.server.openapi import NOT_FOUND, UNAVAILABLE
from agentctl.server.platform_host import HostedAgent, Platform, runs_in_flight
from agentctl.server.public_url import agent_url, platform_url
from agentctl.server.readiness import readiness
from agentctl.server.revision_views import (
    RevisionUpload,
    activate,
    revision_view,
    revisions_page,
)
from agentctl.server.schemas import OkOut, RevisionOut, UsageOut
from agentctl.server.services.usage import (
    by_agent,
    merged,
    merged_total,
    usage_answer,
    usage_query,
)
from agentctl.server.services.usage import summary as usage_summary
from agentctl.server.views import json_response

router = APIRouter(tags=["platform"], responses=NOT_FOUND)

# The run counts the overview shows per agent: queued, running, and how many ended in error.
RUN_COUNTS = ("pending", "running", "success", "error", "timeout", "interrupted")


def platform_of(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


def operator_platform(request: Request) -> Platform:
    """The platform, for the operator only."""
    if not caller_of(request).operator:
        raise Forbidden("the platform's routes need the deployment key: send it as x-api-key")
    return platform_of(request)


def hosted(platform: Platform, name: str) -> HostedAgent:
    found = platform.agent(name)
    if found is None:
        raise NotFound(f"no agent {name!r} on this platform — agentctl agents lists them")
    return found


def deployments(agent: HostedAgent) -> Deployments[AccessPolicy]:
    found = agent.server.deployments
    if found is None:  # every agent of `agentctl serve` takes deploys
        raise NotFound(f"agent {agent.name!r} takes no deploys")
    return found


@router.get("/ok", response_model=OkOut, responses=UNAVAILABLE)
async def ok(request: Request, live: bool = False) -> Response:
    platform = platform_of(request)
    return await readiness(platform.storage, platform.stopping_since is not None, live)


@router.get("/info", response_model=dict[str, Any])
async def info(request: Request) -> Response:
    platform = platform_of(request)
    public = platform.settings.public_url
    agents = [
        {"name": name, "url": agent_url(request, name, public).url} for name in platform.agents
    ]
    return json_response(
        {
            "version": __version__,
            "storage": platform.storage.kind,
            "public_url": public,
            "agents": agents,
            "deploys": True,
            # The console at the platform's root is its overview: the deployment key only.
            "platform": True,
            "credentials": {"bearer": False, "api_key": True, "anonymous": False, "oidc": None},
        },
        headers=platform_url(request, public).cache_headers(),
    )


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> Response:
    """Every agent's metrics, each sample labelled with its agent."""
    platform = operator_platform(request)
    headers = {"x-api-key": request.headers.get("x-api-key", "")}

    async def scrape(agent: HostedAgent) -> httpx.Response:
        transport = httpx.ASGITransport(app=agent.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as http:
            return await http.get("/metrics", headers=headers)

    agents = list(platform.agents.values())
    answers = await asyncio.gather(*(scrape(agent) for agent in agents))
    for answer in answers:
        if answer.status_code != 200:  # e.g. its storage is down: a 503, said as it said it
            kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "retry-after")}
            return Response(answer.content, answer.status_code, kept)
    joined = await asyncio.to_thread(
        join_by_agent,
        {agent.name: answer.text for agent, answer in zip(agents, answers, strict=True)},
    )
    return Response(joined, media_type=CONTENT_TYPE_LATEST)


@router.get("/platform/agents", response_model=list[dict[str, Any]])
async def list_agents(request: Request) -> Response:
    platform = operator_platform(request)
    public = platform.settings.public_url
    listed = []
    for name, agent in sorted(platform.agents.items()):
        deployment = agent.server.deployment
        record = None
        if deployment.number is not None:
            record = await agent.server.storage.revisions.get(deployment.number)
        listed.append(
            {
                "name": name,
                "url": agent_url(request, name, public).url,
                "active_revision": deployment.number,
                "deployed_at": None if record is None else record.created_at.isoformat(),
                "runs_in_flight": await runs_in_flight(agent.server.storage),
            }
        )
    return json_response(listed)


@router.get("/platform/overview", response_model=dict[str, Any])
async def overview(request: Request, deploys: Annotated[int, Query(ge=1, le=200)] = 20) -> Response:
    """Every agent side by side (its active revision, runs running and queued, runs that
    failed, where its console is) and the latest `deploys` deploys across agents, newest
    first: what the platform's console shows at its root."""
    platform = operator_platform(request)
    public = platform.settings.public_url
    agents: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for name, agent in sorted(platform.agents.items()):
        storage = agent.server.storage
        counts = await storage.runs.count_by_status()
        records, _ = await storage.revisions.list(limit=deploys, offset=0)
        active = await storage.revisions.active()
        current = next((record for record in records if record.number == active), None)
        if current is None and active is not None:
            current = await storage.revisions.get(active)
        url = agent_url(request, name, public).url
        agents.append(
            {
                "name": name,
                "url": url,
                "console_url": f"{url}/ui/",
                "active_revision": None if current is None else revision_view(current, active),
                "runs": {status: counts.get(status, 0) for status in RUN_COUNTS},
            }
        )
        history.extend({**revision_view(record, active), "agent": name} for record in records)
    history.sort(key=lambda view: str(view["created_at"]), reverse=True)
    return json_response(
        {
            "agents": agents,
            "unservable": dict(sorted(platform.unservable.items())),
            "deploys": history[:deploys],
        }
    )


@router.get("/platform/usage", response_model=UsageOut)
async def platform_usage(
    request: Request,
    group_by: Literal["agent", "day", "model", "user"] | None = None,
    since: date | None = None,
    until: date | None = None,
    user_id: str | None = None,
) -> Response:
    """What every agent's runs spent (each agent's own storage), summed per agent, day,
    model or user (as `GET /usage` on one agent)."""
    platform = operator_platform(request)
    query = usage_query(caller_of(request), since, until, user_id)
    agents = sorted(platform.agents.items())
    per_agent = None if group_by == "agent" else group_by  # each agent's total is its row
    found = await asyncio.gather(
        *(usage_summary(agent.server.storage, per_agent, query) for _, agent in agents)
    )
    totals = {name: total for (name, _), (_, total) in zip(agents, found, strict=True)}
    if group_by == "agent":
        rows = by_agent(totals)
    else:
        rows = merged(row for agent_rows, _ in found for row in agent_rows)
    total = merged_total(by_agent(totals))
    return json_response(usage_answer(group_by, query, rows, total))


@router.delete("/platform/agents/{name}", response_model=dict[str, Any])
async def delete_agent(name: str, request: Request) -> Response:
    """Delete the agent on every replica, and every record of it."""
    return json_response(await operator_platform(request).delete(name))


@router.post("/platform/revisions", status_code=201, response_model=RevisionOut)
async def deploy(body: RevisionUpload, request: Request) -> Response:
    """Deploy a revision to the agent it names (`[agent].name`), created if new. Answers
    once every live replica serves it, or says which do not (`replicas`), after
    `AGENTCTL_DEPLOY_WAIT_SECONDS` at most."""
    platform = operator_platform(request)
    archive = body.archive_bytes()
    limits = RevisionLimits.of(platform.settings)
    manifest = await asyncio.to_thread(verify_archive, archive, limits)
    name = (manifest.get("agent") or {}).get("name")
    if not isinstance(name, str):
        raise RevisionRefused("the revision's manifest names no agent: build it with agentctl")
    agent = await platform.create(name)
    try:
        record = await deployments(agent).upload(archive, body.secrets)
    except BaseException:
        if await agent.server.storage.revisions.active() is None:  # refused at its first deploy
            with contextlib.suppress(AgentctlError):
                await platform.delete(name)
        raise
    view = revision_view(record, record.number)
    view["url"] = agent_url(request, name, platform.settings.public_url).url
    view["replicas"] = (await platform.rollout(name, record.number)).view()
    return json_response(view, status=201)


@router.get("/platform/agents/{name}/revisions", response_model=list[RevisionOut])
async def list_revisions(
    name: str,
    request: Request,
    limit: Annotated[Limit, Query()] = 20,
    offset: Annotated[Offset, Query()] = 0,
) -> Response:
    agent = hosted(operator_platform(request), name)
    return await revisions_page(deployments(agent), limit, offset)


@router.post("/platform/agents/{name}/revisions/{number}/activate", response_model=RevisionOut)
async def activate_revision(name: str, number: RevisionNumber, request: Request) -> Response:
    platform = operator_platform(request)
    record = await activate(deployments(hosted(platform, name)), number)
    view = revision_view(record, record.number)
    view["replicas"] = (await platform.rollout(name, number)).view()
    return json_response(view)


@router.api_route(
    "/{path:path}",
    methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    include_in_schema=False,
)
async def no_agent_yet(path: str) -> Response:
    """Before the first deploy, an agent's path (the dispatcher hands the root nothing else)."""
    raise NotDeployed()
