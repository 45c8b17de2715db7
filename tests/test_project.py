"""Loading a valid project: defaults, detection rules and the environment."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from agentctl.bundle.requirements import requirements_of
from agentctl.bundle.revision import build_revision
from agentctl.errors import ConfigError
from agentctl.project import load_project
from agentctl.project.model import AuthConfig, McpOAuth, McpServer, Project, SandboxConfig, Subagent
from agentctl.runtime.mcp_tools import load_mcp_tools
from tests.conftest import WriteFiles

SKILL = "---\nname: {name}\ndescription: {description}\n---\n# {name}\n"

FULL_PROJECT = {
    "agent.toml": (
        '[agent]\nname = "demo"\nmodel = "anthropic:claude-sonnet-4-5"\n\n'
        '[sandbox]\nprovider = "platform_sandbox"\nscope = "assistant"\n\n'
        '[auth]\nprovider = "idp_b"\n'
    ),
    "AGENTS.md": "You help.\n",
    ".env": "DOCS_TOKEN=from-dotenv\nIDP_B_SECRET_KEY=sk_test\n",
    "skills/review/SKILL.md": SKILL.format(name="review", description="Reviews code"),
    "skills/review/scripts/check.py": "print('ok')\n",
    "skills/review/.cache/junk.txt": "hidden\n",
    "skills/.draft/SKILL.md": "not a skill yet\n",
    "user/AGENTS.md": "# About you\n",
    "mcp.json": (
        '{"mcpServers": {"docs": {"url": "https://docs.example.com/mcp", '
        '"transport": "streamable_http", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},'
        ' "events": {"url": "https://events.example.com/sse", "type": "sse"}}}'
    ),
    "subagents/research/agent.toml": (
        '[agent]\nname = "research"\ndescription = "Digs into a topic"\n'
        'model = "openai:gpt-4.1-mini"\n'
    ),
    "subagents/research/AGENTS.md": "Research carefully.\n",
    "subagents/research/skills/search/SKILL.md": SKILL.format(
        name="search", description="Searches well"
    ),
    "subagents/research/mcp.json": '{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}',
    "subagents/writer/agent.toml": '[agent]\nname = "writer"\ndescription = "Writes prose"\n',
    "subagents/writer/AGENTS.md": "Write clearly.\n",
    "subagents/.hidden/agent.toml": "not = [valid",
    "README.md": "not bundled\n",
}


def test_minimal_project_gets_every_default(write_files: WriteFiles) -> None:
    root = write_files({"agent.toml": '[agent]\nname = "tiny"\n', "AGENTS.md": "Hi\n"})
    project = load_project(root / "agent.toml", environ={})
    assert project.name == "tiny"
    assert project.model == "openai:gpt-4.1"
    assert project.sandbox == SandboxConfig("none", "agent-deploy", "python:3", "thread")
    assert project.auth is None
    assert project.user_template is None
    assert (project.skills, project.subagents, project.mcp_servers) == ((), (), ())
    assert project.files == ("AGENTS.md", "agent.toml")


def test_full_project_is_detected_by_convention(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    project = load_project(root, environ={})
    assert project.sandbox.provider == "platform_sandbox"
    assert project.sandbox.scope == "assistant"
    assert project.auth is not None
    assert project.auth.provider == "idp_b"
    [review] = project.skills
    assert review.files == ("skills/review/SKILL.md", "skills/review/scripts/check.py")
    assert project.user_template == "# About you\n"
    research, writer = project.subagents
    assert (research.name, research.model, writer.model) == (
        "research",
        "openai:gpt-4.1-mini",
        None,
    )
    assert [s.name for s in research.skills] == ["search"]
    assert [m.name for m in research.mcp_servers] == ["web"]
    assert writer.skills == ()
    docs, events = project.mcp_servers
    assert (docs.transport, events.transport) == ("http", "sse")
    assert docs.headers == {"Authorization": "Bearer ${DOCS_TOKEN}"}
    assert docs.env_names == ("DOCS_TOKEN",)
    assert "README.md" not in project.files
    assert not any("/." in f or f.startswith(".") for f in project.files)
    assert project.models == ("anthropic:claude-sonnet-4-5", "openai:gpt-4.1-mini")


def test_empty_user_folder_means_an_empty_template(write_files: WriteFiles) -> None:
    root = write_files({"agent.toml": '[agent]\nname = "a"\n', "AGENTS.md": "Hi\n"})
    (root / "user").mkdir()
    assert load_project(root, environ={}).user_template == ""


def test_environment_wins_over_dotenv(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    project = load_project(root, environ={"DOCS_TOKEN": "from-environment"})
    assert project.env["DOCS_TOKEN"] == "from-environment"
    assert project.env["IDP_B_SECRET_KEY"] == "sk_test"


def test_dependency_table_drives_packages_and_env(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    needs = requirements_of(load_project(root, environ={}))
    assert [p.name for p in needs.packages] == [
        "langchain-anthropic",
        "langchain-mcp-adapters",
        "langchain-openai",
    ]
    assert needs.env_names == (
        "ANTHROPIC_API_KEY",
        "DOCS_TOKEN",
        "IDP_B_SECRET_KEY",
        "OPENAI_API_KEY",
        "PLATFORM_API_KEY",
    )
    missing = {need.name: need.reason for need in needs.missing_env({"DOCS_TOKEN": "x"})}
    assert missing["OPENAI_API_KEY"] == "model openai:gpt-4.1-mini"
    assert missing["PLATFORM_API_KEY"] == "sandbox platform_sandbox"
    assert "DOCS_TOKEN" not in missing


def test_partner_sandbox_and_idp_a_needs(write_files: WriteFiles) -> None:
    root = write_files(
        {
            "agent.toml": (
                '[agent]\nname = "a"\nmodel = "bedrock_converse:anthropic.claude"\n'
                '[sandbox]\nprovider = "sandbox_b"\n[auth]\nprovider = "idp_a"\n'
            ),
            "AGENTS.md": "Hi\n",
        }
    )
    needs = requirements_of(load_project(root, environ={}))
    assert [p.name for p in needs.packages] == ["langchain-aws", "langchain-modal"]
    assert set(needs.env_names) == {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_DEFAULT_REGION",
        "MODAL_TOKEN_ID",
        "MODAL_TOKEN_SECRET",
        "IDP_A_URL",
        "IDP_A_PUBLISHABLE_DEFAULT_KEY",
    }


def test_odd_file_name_config_is_accepted(write_files: WriteFiles) -> None:
    root = write_files({"prod.toml": '[agent]\nname = "p"\n', "AGENTS.md": "Hi\n"})
    project = load_project(root / "prod.toml", environ={})
    assert project.config_file == "prod.toml"
    assert Path(project.root) == root


def test_approval_gates_are_parsed(write_files: WriteFiles) -> None:
    root = write_files(
        {
            "agent.toml": (
                '[agent]\nname = "a"\n[interrupt_on]\nwrite_file = true\nread_file = false\n'
                'edit_file = { allowed_decisions = ["reject", "approve"] }\n'
            ),
            "AGENTS.md": "Hi\n",
        }
    )
    gates = load_project(root, environ={}).interrupt_on
    assert {tool: gate.allowed_decisions for tool, gate in gates.items()} == {
        "write_file": ("approve", "edit", "reject"),
        "edit_file": ("approve", "reject"),
    }


def problems(root: Path) -> list[str]:
    try:
        load_project(root, environ={})
    except ConfigError as error:
        return [str(p) for p in error.problems]
    return []


def test_frontmatter_must_close_with_a_line_break(write_files: WriteFiles) -> None:
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "a"\n',
            "AGENTS.md": "Hi\n",
            "skills/alpha/SKILL.md": "---\nname: alpha\ndescription: Does alpha\n---",
        }
    )
    [problem] = problems(root)
    assert problem.startswith("skills/alpha/SKILL.md: has no frontmatter")


def test_one_mistake_gives_one_problem(write_files: WriteFiles) -> None:
    root = write_files({"agent.toml": 'agent = "x"\n', "AGENTS.md": "Hi\n"})
    assert problems(root) == [
        "agent.toml: [agent]: must be a table, not a string — write it as "
        "[agent] on a line of its own, then its keys"
    ]


def test_model_without_a_name_suggests_a_whole_model(write_files: WriteFiles) -> None:
    root = write_files({"agent.toml": '[agent]\nname = "a"\nmodel = "openai:"\n', "AGENTS.md": "H"})
    assert problems(root) == [
        'agent.toml: [agent].model: "openai:" is not in provider:model form — '
        'write it as "openai:gpt-4.1"'
    ]


def test_a_bom_in_agent_toml_is_accepted(write_files: WriteFiles) -> None:
    root = write_files({"agent.toml": '\ufeff[agent]\nname = "bom"\n', "AGENTS.md": "Hi\n"})
    assert load_project(root, environ={}).name == "bom"


def test_stdio_declared_as_type_is_refused_beside_a_transport(write_files: WriteFiles) -> None:
    server = '{"mcpServers": {"x": {"url": "http://h/mcp", "transport": "http", "type": "stdio"}}}'
    root = write_files(
        {"agent.toml": '[agent]\nname = "a"\n', "AGENTS.md": "H", "mcp.json": server}
    )
    assert problems(root)[0].startswith("mcp.json: mcpServers.x: uses the stdio transport")


def test_a_server_may_name_an_agent_of_the_platform(write_files: WriteFiles) -> None:
    servers = {"peer": {"agent": "researcher"}, "calc": {"agent": "calc", "url": "http://h/mcp"}}
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "a"\n',
            "AGENTS.md": "H",
            "mcp.json": json.dumps({"mcpServers": servers}),
        }
    )
    project = load_project(root, environ={})
    assert [(m.name, m.agent, m.url) for m in project.mcp_servers] == [
        ("peer", "researcher", ""), ("calc", "calc", "http://h/mcp")]  # fmt: skip
    assert project.called_agents == {"researcher", "calc"}


def test_a_server_with_oauth_is_user_owned(write_files: WriteFiles) -> None:
    servers = {
        "notes": {
            "url": "https://notes.example.com/mcp",
            "description": "Your notes in Example Notes",
            "oauth": {
                "scopes": ["notes.read", "notes.write"],
                "client_id": "${NOTES_CLIENT_ID}",
                "client_secret": "${NOTES_CLIENT_SECRET}",
            },
        },
        "wiki": {"url": "https://wiki.example.com/mcp", "oauth": {}, "headers": {"X-Team": "a"}},
        "docs": {"url": "https://docs.example.com/mcp", "description": "The team's docs"},
    }
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "a"\n',
            "AGENTS.md": "H",
            "mcp.json": json.dumps({"mcpServers": servers}),
            ".env": "NOTES_CLIENT_ID=notes-client\nNOTES_CLIENT_SECRET=notes-secret-value\n",
        }
    )
    project = load_project(root, environ={})
    notes, wiki, docs = project.mcp_servers
    assert notes.oauth == McpOAuth(
        scopes=("notes.read", "notes.write"),
        client_id="${NOTES_CLIENT_ID}",
        client_secret="${NOTES_CLIENT_SECRET}",
    )
    assert (notes.description, notes.user_owned) == ("Your notes in Example Notes", True)
    assert notes.env_names == ("NOTES_CLIENT_ID", "NOTES_CLIENT_SECRET")
    assert (wiki.oauth, wiki.user_owned, wiki.description) == (McpOAuth(), True, None)
    assert (docs.oauth, docs.user_owned, docs.description) == (None, False, "The team's docs")
    needs = requirements_of(project)
    assert {"NOTES_CLIENT_ID", "NOTES_CLIENT_SECRET"} <= set(needs.env_names)
    manifest = build_revision(project).manifest
    assert manifest["mcp_servers"][0] == {
        "name": "notes",
        "transport": "http",
        "url": "https://notes.example.com/mcp",
        "headers": [],
        "description": "Your notes in Example Notes",
        "oauth": {"scopes": ["notes.read", "notes.write"], "client_id": "${NOTES_CLIENT_ID}"},
    }
    assert "notes-secret-value" not in json.dumps(manifest)
    assert {"NOTES_CLIENT_ID", "NOTES_CLIENT_SECRET"} <= set(manifest["env"])


def test_the_user_owned_servers_are_the_agents_and_its_subagents() -> None:
    notes = McpServer("notes", "http", "https://notes.example.com/mcp", oauth=McpOAuth())
    docs = McpServer("docs", "http", "https://docs.example.com/mcp")
    mail = McpServer("mail", "http", "https://mail.example.com/mcp", oauth=McpOAuth())
    helper = Subagent("helper", "Helps", None, "subagents/helper", "You help.", (), (mail, docs))
    project = Project(
        Path("."), "agent.toml", "a", "openai:x", "H", subagents=(helper,), mcp_servers=(notes,)
    )
    assert project.user_owned_servers == {"notes": notes, "mail": mail}
    assert replace(project, subagents=(), mcp_servers=(docs,)).user_owned_servers == {}


async def test_user_owned_servers_are_not_listed_at_load(calc_port: int) -> None:
    """Listing them needs a user's token: the load lists the agent's own servers only (the
    user-owned one's address answers nothing, so listing it would fail the load)."""
    own = McpServer("calc", "http", f"http://127.0.0.1:{calc_port}/mcp")
    user_owned = McpServer("notes", "http", "http://127.0.0.1:9/mcp", oauth=McpOAuth())
    assert await load_mcp_tools([user_owned], {}) == []
    tools = await load_mcp_tools([user_owned, own], {})
    assert [tool.name for tool in tools] == ["add"]


def test_a_linked_skill_folder_inside_the_project_is_followed_once(
    write_files: WriteFiles,
) -> None:
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "a"\n',
            "AGENTS.md": "Hi\n",
            "skills/review/SKILL.md": "---\nname: review\ndescription: Reviews\n---\n",
        }
    )
    (root / "skills/review/loop").symlink_to("..")
    assert load_project(root, environ={}).files == (
        "AGENTS.md",
        "agent.toml",
        "skills/review/SKILL.md",
    )


def _auth_project(write_files: WriteFiles, auth: str, folder: str = "project") -> Path:
    files = {"agent.toml": f'[agent]\nname = "a"\n[auth]\n{auth}', "AGENTS.md": "Hi\n"}
    return write_files(files, folder)


def test_oidc_auth_takes_an_issuer_and_an_audience(write_files: WriteFiles) -> None:
    root = _auth_project(
        write_files,
        'provider = "oidc"\nissuer = "https://login.example.com/realms/demo"\n'
        'audience = "my-agent"\n',
    )
    project = load_project(root, environ={})
    assert project.auth == AuthConfig(
        "oidc", issuer="https://login.example.com/realms/demo", audience="my-agent"
    )
    assert requirements_of(project).env_names == ("OPENAI_API_KEY",)  # oidc needs no secret


def test_oidc_auth_without_issuer_or_audience_names_both(write_files: WriteFiles) -> None:
    root = _auth_project(write_files, 'provider = "oidc"\n')
    assert problems(root) == [
        'agent.toml: [auth].audience: is required — add audience = "my-agent"',
        'agent.toml: [auth].issuer: is required — add issuer = "https://login.example.com"',
    ]


def test_oidc_issuer_must_be_an_http_url_and_audience_not_empty(write_files: WriteFiles) -> None:
    root = _auth_project(
        write_files, 'provider = "oidc"\nissuer = "login.example.com"\naudience = " "\n'
    )
    assert problems(root) == [
        "agent.toml: [auth].audience: must not be empty — set it to the audience (client id) "
        "your identity provider puts in tokens' aud",
        "agent.toml: [auth].issuer: must be an http:// or https:// URL without query or "
        'fragment, not "login.example.com" — write it as issuer = "https://login.example.com"',
    ]


def test_oidc_issuer_with_a_query_or_of_the_wrong_type_is_refused(write_files: WriteFiles) -> None:
    for issuer, start in (
        ('"https://login.example.com/?tenant=a"', "must be an http:// or https:// URL"),
        ('"http://[::1"', "must be an http:// or https:// URL"),
        ("42", "must be a string, not a number"),
    ):
        root = _auth_project(write_files, f'provider = "oidc"\nissuer = {issuer}\naudience = "a"\n')
        [problem] = problems(root)
        assert problem.startswith(f"agent.toml: [auth].issuer: {start}")


def test_issuer_audience_and_client_id_belong_to_oidc_only(write_files: WriteFiles) -> None:
    root = _auth_project(
        write_files,
        'provider = "idp_b"\nissuer = "https://x.example.com"\naudience = "a"\nclient_id = "c"\n',
    )
    allowed = 'provider (issuer, audience and client_id are for provider = "oidc", not "idp_b")'
    assert problems(root) == [
        f"agent.toml: [auth].audience: unknown key — use only these keys here: {allowed}",
        f"agent.toml: [auth].client_id: unknown key — use only these keys here: {allowed}",
        f"agent.toml: [auth].issuer: unknown key — use only these keys here: {allowed}",
    ]


def test_oidc_client_id_is_the_console_s_public_client(write_files: WriteFiles) -> None:
    oidc = 'provider = "oidc"\nissuer = "https://login.example.com"\naudience = "a"\n'
    root = _auth_project(write_files, oidc + 'client_id = "agentctl-console"\n')
    auth = load_project(root).auth
    assert auth is not None
    assert auth.client_id == "agentctl-console"
    empty = _auth_project(write_files, oidc + 'client_id = ""\n', "empty")
    assert problems(empty) == [
        "agent.toml: [auth].client_id: must not be empty — set it to the id of the public "
        "client the web console signs in with, or leave client_id out"
    ]


def test_an_unknown_auth_provider_lists_oidc(write_files: WriteFiles) -> None:
    root = _auth_project(write_files, 'provider = "github"\n')
    assert problems(root) == [
        'agent.toml: [auth].provider: "github" is not allowed — use one of: idp_a, idp_b, oidc'
    ]


def test_a_secret_is_found_anywhere_and_a_plain_word_is_no_secret(
    write_files: WriteFiles,
) -> None:
    """The offline set-up docs/testing.md gives (`OPENAI_API_KEY=scripted`, the model
    `openai:scripted-model`, a file that speaks of the scripted model) is no leak; a real key
    in a sentence, in quotes or in a URL is, and so is a lower-case word long enough to be a
    passphrase."""
    offline = {
        "agent.toml": '[agent]\nname = "offline"\nmodel = "openai:scripted-model"\n',
        "AGENTS.md": "Answer with the scripted model.\n",
        ".env": "OPENAI_API_KEY=scripted\n",
    }
    assert load_project(write_files(offline, "offline")).name == "offline"
    for folder, text, env in [
        (
            "sentence",
            "Use sk-live-0123456789abcdef here.\n",
            "OPENAI_API_KEY=sk-live-0123456789abcdef",
        ),
        ("quoted", 'key: "Abcdefgh1"\n', "OPENAI_API_KEY=Abcdefgh1"),
        ("url", "https://x.test/?key=Abcdefgh1&a=b\n", "OPENAI_API_KEY=Abcdefgh1"),
        ("phrase", "say correcthorsebatterystaple\n", "OPENAI_API_KEY=correcthorsebatterystaple"),
    ]:
        files = {"agent.toml": '[agent]\nname = "leaky"\n', "AGENTS.md": text, ".env": env + "\n"}
        with pytest.raises(ConfigError) as refused:
            load_project(write_files(files, folder))
        assert "AGENTS.md: line 1: contains the value of OPENAI_API_KEY from .env" in str(
            refused.value
        )
