"""`agentctl deploy [--config PATH] [--dry-run]`, and the revisions it made of an agent:
`agentctl revisions` lists them, `agentctl rollback [NUMBER]` activates an earlier one."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from agentctl.bundle.build import check_env, store_revision
from agentctl.bundle.dependencies import PLATFORM_API_KEY
from agentctl.bundle.limits import RevisionLimits
from agentctl.bundle.requirements import install_command, requirements_of
from agentctl.bundle.revision import ARCHIVE_FILE, Revision, build_revision, deployed_variables
from agentctl.cli.target import agent_of, agent_option, config_option, platform_of, when
from agentctl.errors import NotServedEverywhere, OlderPlatform, UserError
from agentctl.platform.client import PLATFORM_URL, PlatformClient
from agentctl.project import load_project
from agentctl.project.envfile import is_set


@click.command()
@config_option
@click.option("--dry-run", is_flag=True, help="Validate and bundle only; deploy nothing.")
def deploy(config: Path, dry_run: bool) -> None:
    """Bundle the project into a new immutable revision and deploy it.

    Every run fully rebuilds the revision, writes it to the project's .agentctl/build/
    folder, and (without --dry-run) uploads it to the `agentctl serve` deployment at
    PLATFORM_URL with PLATFORM_API_KEY, together with the values of the variables it uses
    (sent apart from the archive, stored encrypted). Every replica switches to it within
    seconds; runs in flight finish on the revision they started on.
    """
    started = time.monotonic()
    step("Validating", str(config))
    project = load_project(config, limits=RevisionLimits.from_env(os.environ))
    requirements = requirements_of(project)
    check_env(project, requirements, platform_key=not dry_run)
    if dry_run and not is_set(project.env, PLATFORM_API_KEY):
        warn(f"{PLATFORM_API_KEY} is not set: a real deploy needs it")
    missing = requirements.missing_packages()
    if missing:
        warn(f"packages the revision needs are not installed here: {install_command(missing)}")
    step("Bundling", f"{len(project.files)} files")
    revision = build_revision(project)
    folder = store_revision(project, revision)
    used = deployed_variables(revision.manifest)
    secrets = {name: project.env[name] for name in used if is_set(project.env, name)}
    sent = ", ".join(sorted(secrets)) or "none"
    summarize(revision, folder, sent)
    if dry_run:
        return
    platform = PlatformClient(project.env[PLATFORM_URL].rstrip("/"), project.env[PLATFORM_API_KEY])
    hosted = hosted_agents(platform)
    step("Uploading", f"{len(revision.archive) / 1024:.1f} KiB to {platform.url} (secrets: {sent})")
    deployed = platform.upload(revision.archive, secrets)
    number = deployed["number"]
    # The agent's URL as the user reaches the platform; an older server serves its one
    # agent at its root.
    url = platform.url if hosted is None else platform.agent_url(project.name)
    where = wait_for_replicas(platform, url, number, deployed.get("replicas"), project.name)
    seconds = time.monotonic() - started
    done = "" if hosted is None else "created, " if project.name not in hosted else "updated, "
    click.echo(
        click.style(f"Deployed revision {number}", fg="green", bold=True)
        + f" of agent {project.name} ({done}{revision.short_id}) in {seconds:.1f} s{where}"
    )
    click.echo(f"  URL   {url}")
    header = BEARER if project.auth is not None else API_KEY
    click.echo(f"  Try   {example_call(url, project.name, header)}")


def hosted_agents(platform: PlatformClient) -> set[str] | None:
    """The names of the agents the platform hosts; None on an older server (one agent)."""
    try:
        return {item["name"] for item in platform.agents()}
    except OlderPlatform:
        return None


@click.command()
@config_option
@agent_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print the revisions as JSON.")
def revisions(config: Path, agent: str | None, limit: int, as_json: bool) -> None:
    """List the revisions of an agent deployed to PLATFORM_URL, newest first."""
    platform = platform_of(config)
    name = agent_of(platform, config, agent)
    listed = platform.revisions(name, limit)
    if as_json:
        click.echo(json.dumps(listed, indent=2))
        return
    if not listed:
        click.echo(f"agent {name} has no revision — run agentctl deploy")
        return
    click.echo(f"agent {name}  {platform.agent_url(name)}")
    click.echo(f"  {'#':>4}  {'revision':<12}  {'deployed at':<23}  model")
    for item in listed:
        mark = "*" if item["active"] else " "
        click.echo(
            f"{mark} {item['number']:>4}  {item['revision_id'][:12]:<12}  "
            f"{when(item['created_at']):<23}  {item['model']}"
        )
    click.echo("(* active)")


@click.command()
@config_option
@agent_option
@click.argument("number", required=False, type=click.IntRange(1))
def rollback(config: Path, agent: str | None, number: int | None) -> None:
    """Make an earlier revision of an agent active again (default: the one before the
    active one)."""
    platform = platform_of(config)
    name = agent_of(platform, config, agent)
    if number is None:
        listed = platform.revisions(name, 1000)
        active = next((r["number"] for r in listed if r["active"]), None)
        earlier = [r["number"] for r in listed if active is not None and r["number"] < active]
        if not earlier:
            raise UserError(
                f"agent {name} has no revision before the active one — name one to activate"
            )
        number = max(earlier)
    step("Activating", f"revision {number} of agent {name} on {platform.url}")
    activated = platform.activate(name, number)
    where = wait_for_replicas(
        platform, platform.agent_url(name), number, activated.get("replicas"), name
    )
    click.echo(
        click.style(f"Revision {number} of agent {name} is active", fg="green", bold=True)
        + f" ({activated['revision_id'][:12]}){where}"
    )


def wait_for_replicas(
    platform: PlatformClient, url: str, number: int, replicas: Any, agent: str
) -> str:
    """Make sure every live replica serves revision `number` of `agent`: the platform said
    where it is served (`replicas`, in its answer) once they all did, or after its wait; an
    older platform did not, and the replicas are asked at `url` (the agent's base URL).
    Returns what to say of where it is served (", served by N replicas").

    Raises `NotServedEverywhere` naming the replicas that do not serve it."""
    step("Switching", f"replicas to revision {number}")
    if not isinstance(replicas, dict):  # an older server
        if not platform.wait_live(url, number):
            warn(f"not every replica answered with revision {number} yet; they switch on their own")
        return ""
    if replicas.get("unknown"):
        warn(f"the platform could not tell which replicas serve it: {replicas['unknown']}")
    serving, behind = replicas.get("serving") or [], replicas.get("not_serving") or []
    if behind:
        names = "; ".join(f"{item['replica']} ({item['reason']})" for item in behind)
        raise NotServedEverywhere(
            f"revision {number} of agent {agent} is active, but {len(behind)} of "
            f"{len(behind) + len(serving)} live replicas do not serve it: {names} — a client "
            "behind the load balancer may still reach the revision before there; a replica "
            "switches on its own once it can load it, else check its log (a package or a "
            "variable it lacks) or restart it"
        )
    return f", served by {len(serving)} replica{'' if len(serving) == 1 else 's'}"


# The credential an example call sends: a signed-in user's, or the deployment key.
BEARER = "Authorization: Bearer <session token>"
API_KEY = "x-api-key: $PLATFORM_API_KEY"


def example_call(url: str, assistant: str, header: str | None = None) -> str:
    """A one-line request that runs the agent, sending `header` when given."""
    body = {
        "assistant_id": assistant,
        "input": {"messages": [{"role": "user", "content": "hello"}]},
    }
    sent = f' -H "{header}"' if header == API_KEY else f" -H '{header}'" if header else ""
    return (
        f"curl -s {url}/runs/wait -H 'Content-Type: application/json'{sent} -d '{json.dumps(body)}'"
    )


def step(what: str, detail: str) -> None:
    click.echo(click.style(f"{what}… ", bold=True) + detail, err=True)


def warn(message: str) -> None:
    click.echo(click.style("warning: ", fg="yellow", bold=True) + message, err=True)


def summarize(revision: Revision, folder: Path, secrets: str) -> None:
    """A readable summary of what the revision holds; `secrets`: the names of the variables
    a deploy sends."""
    m = revision.manifest
    rows = [
        ("agent", m["agent"]["name"]),
        ("revision", f"{revision.short_id}  (sha256 {revision.id})"),
        ("model", m["agent"]["model"]),
        ("skills", ", ".join(s["name"] for s in m["skills"]) or "none"),
        ("user memory", m["user_template"] or "none (no user/ folder)"),
        ("subagents", _subagents(m) or "none"),
        ("mcp servers", _servers(m["mcp_servers"]) or "none"),
        ("sandbox", m["sandbox"]["provider"]),
        ("auth", m["auth"]["provider"] if m["auth"] else "none"),
        ("packages", ", ".join(m["packages"]) or "none"),
        ("env", ", ".join(m["env"]) or "none"),
        ("secrets", secrets),
        ("path", str(folder / ARCHIVE_FILE)),
    ]
    click.echo(click.style(f"Revision {revision.short_id} built", fg="green", bold=True))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        lines = value.split("\n")
        click.echo(f"  {label:<{width}}  {lines[0]}")
        for more in lines[1:]:
            click.echo(f"  {'':<{width}}  {more}")


def _servers(servers: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"{s['name']} ({'agent ' + s['agent'] if 'agent' in s else s['transport']}"
        f"{', user-owned' if 'oauth' in s else ''})"
        for s in servers
    )


def _subagents(manifest: dict[str, Any]) -> str:
    lines = []
    for sub in manifest["subagents"]:
        model = sub["model"] + (" inherited" if sub["model_inherited"] else "")
        skills = ", ".join(s["name"] for s in sub["skills"]) or "no skills"
        mcp = _servers(sub["mcp_servers"])
        lines.append(f"{sub['name']}: {model}; {skills}" + (f"; mcp {mcp}" if mcp else ""))
    return "\n".join(lines)
