"""`agentctl sandbox-server`'s HTTP API through `SandboxClient`, as replicas use it."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from agentctl.errors import (
    RuntimeFailure,
    SandboxBusy,
    SandboxFull,
    SandboxRefused,
    SandboxUnavailable,
)
from agentctl.sandbox import SandboxKey, SandboxService, SandboxSpec
from agentctl.sandbox.base import sandbox_owner
from agentctl.sandbox.client import SandboxClient
from agentctl.sandbox.http import sandbox_app, spec_json
from agentctl.sandbox.platform import PlatformPool
from agentctl.server.http import uvicorn_config
from agentctl.server.sandbox_cleanups import remove_sandboxes_of
from agentctl.settings import SandboxSettings
from tests.conftest import eventually
from tests.sandbox.conftest import cancel_and_wait_for_the_end

KEY = "sandbox-test-key"


@pytest.fixture
async def url(service: SandboxService) -> AsyncIterator[str]:
    """The sandbox service over HTTP on a free port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    uv = uvicorn.Server(uvicorn_config(sandbox_app(service, KEY), log_level="warning"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    uv.should_exit = True
    await task
    sock.close()


@pytest.fixture
async def client(url: str) -> AsyncIterator[SandboxClient]:
    client = SandboxClient(url, KEY, timeout=30)
    yield client
    await client.aclose()


async def test_files_and_commands_travel_intact(client: SandboxClient) -> None:
    sandbox = await PlatformPool(client, SandboxSpec()).acquire(SandboxKey("coder", "t1"))
    blob = bytes(range(256)) * 10
    uploaded = await sandbox.aupload_files([("/workspace/data/blob.bin", blob)])
    assert uploaded[0].error is None
    downloaded = await sandbox.adownload_files(
        ["/workspace/data/blob.bin", "/workspace/none", "/workspace/data"]
    )
    assert downloaded[0].content == blob
    assert [d.error for d in downloaded[1:]] == ["file_not_found", "is_directory"]
    denied = await sandbox.aupload_files([("/usr/bin/evil", b"x")])
    assert denied[0].error == "permission_denied"
    written = await sandbox.awrite("/workspace/hello.py", "print('hi from', __name__)\n")
    assert written.error is None
    result = await sandbox.aexecute("python3 hello.py")
    assert (result.output, result.exit_code) == ("hi from __main__\n", 0)
    assert [info.name for info in await client.list_sandboxes()] == ["t.coder.t1"]


async def test_a_sandbox_gone_is_made_again(client: SandboxClient) -> None:
    pool = PlatformPool(client, SandboxSpec())
    sandbox = await pool.acquire(SandboxKey("coder", "t1"))
    await sandbox.aexecute("touch before")
    assert await client.delete("t.coder.t1")
    assert not await client.delete("t.coder.t1")
    result = await sandbox.aexecute("ls -A; echo listed")
    assert result.output == "listed\n"


async def test_skills_follow_the_revision(client: SandboxClient) -> None:
    first = SandboxSpec(skills={"greet/SKILL.md": b"v1", "greet/old.py": b"print(1)"})
    await client.ensure("a.coder", first)
    second = SandboxSpec(skills={"greet/SKILL.md": b"v2"})
    assert not await client.ensure("a.coder", second)
    result = await client.execute(
        "a.coder", "cat /memories/skills/greet/SKILL.md; ls /memories/skills/greet"
    )
    assert result.output == b"v2SKILL.md\n"


async def test_a_wrong_key_is_refused(url: str) -> None:
    client = SandboxClient(url, "not-the-key", timeout=5)
    with pytest.raises(RuntimeFailure, match="refused the deployment key"):
        await client.ensure("t.coder.t1", SandboxSpec())
    await client.aclose()


async def test_an_unreachable_service_says_where_it_looked() -> None:
    client = SandboxClient("http://127.0.0.1:9", KEY, timeout=5)
    with pytest.raises(SandboxUnavailable, match="AGENTCTL_SANDBOX_URL"):
        await client.execute("t.coder.t1", "true")
    await client.aclose()


async def test_unknown_images_and_bad_requests_get_clear_errors(
    client: SandboxClient, url: str
) -> None:
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}) as http:
        bad_json = await http.post("/sandboxes/t.coder.t1/execute", content=b"{nope")
        no_command = await http.post("/sandboxes/t.coder.t1/execute", json={"timeout": 3})
        bad_name = await http.put("/sandboxes/..%2Fetc", json={})
        missing = await http.post("/sandboxes/t.coder.none/execute", json={"command": "true"})
    assert (bad_json.status_code, bad_json.json()) == (
        400,
        {"detail": "the request body is not JSON"},
    )
    assert no_command.json() == {"detail": "command: expected a string"}
    assert bad_name.status_code == 404
    assert missing.status_code == 404
    with pytest.raises(SandboxRefused, match="image 'no/such' is not a valid image name"):
        await client.ensure("t.coder.t2", SandboxSpec(image="no/such"))


async def test_idle_sandboxes_expire(sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCTL_SANDBOX_THREAD_TTL_SECONDS", "1")
    service = SandboxService(SandboxSettings.from_env(), sandbox_dir / "expiring")
    try:
        await service.ensure("t.coder.t1", SandboxSpec())
        await service.ensure("a.coder", SandboxSpec())

        async def expired() -> bool:
            return [i.name for i in await service.list_sandboxes()] == ["a.coder"]

        await eventually(expired, 10, "the idle thread sandbox to expire")
    finally:
        await service.aclose()


async def test_a_command_whose_caller_gave_up_is_stopped(client: SandboxClient) -> None:
    await client.ensure("t.coder.t1", SandboxSpec())
    await cancel_and_wait_for_the_end(client.execute("t.coder.t1", "sleep 30; echo never"))


async def test_what_cannot_be_done_is_refused_not_failed(client: SandboxClient, url: str) -> None:
    for skills in ({"../escape.py": b"x"}, {"": b"x"}, {"a": b"x", "a/b": b"y"}):
        with pytest.raises(SandboxRefused):
            await client.ensure("t.coder.bad", SandboxSpec(skills=skills))
    assert await client.list_sandboxes() == []
    await client.ensure("t.coder.t1", SandboxSpec())
    running = asyncio.create_task(client.execute("t.coder.t1", "sleep 2"))
    await asyncio.sleep(0.5)
    with pytest.raises(SandboxBusy, match="is running a command"):
        await client.delete("t.coder.t1")
    await running
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}) as http:
        fraction = await http.post(
            "/sandboxes/t.coder.t1/execute", json={"command": "true", "output_bytes": 1.5}
        )
    assert fraction.status_code == 400
    assert "output_bytes" in fraction.json()["detail"]


async def test_a_url_that_is_not_a_sandbox_service_is_named(url: str) -> None:
    client = SandboxClient(f"{url}/elsewhere", KEY, timeout=5)
    with pytest.raises(RuntimeFailure, match="is not a sandbox service"):
        await client.execute("t.coder.t1", "true")
    await client.aclose()


@pytest.fixture
def small_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCTL_SANDBOX_DISK_MB", "1")


async def test_a_write_past_the_disk_limit_is_a_507_naming_the_sandbox_and_the_limit(
    small_disk: None, url: str, client: SandboxClient
) -> None:
    await PlatformPool(client, SandboxSpec()).acquire(SandboxKey("coder", "t1"))
    body = {"command": "cat > big", "stdin": base64.b64encode(b"x" * (2 << 20)).decode()}
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}) as http:
        response = await http.post("/sandboxes/t.coder.t1/execute", json=body)
        assert response.status_code == 507
        detail = response.json()["detail"]
        assert detail.startswith("sandbox t.coder.t1: writing 2097152 bytes would take")
        assert "past its disk limit of 1 MB (AGENTCTL_SANDBOX_DISK_MB)" in detail
        assert (await http.get("/ok")).status_code == 200


async def test_a_full_disk_under_the_service_is_a_507_not_a_crash(
    url: str, client: SandboxClient, sandbox_dir: Path
) -> None:
    pool = PlatformPool(client, SandboxSpec())
    await pool.acquire(SandboxKey("coder", "t1"))
    # The service's next write to the sandbox's state meets a full device, as on a full disk.
    (sandbox_dir / "boxes" / "t.coder.t1" / ".sandbox.json.new").symlink_to("/dev/full")
    changed = SandboxSpec(skills={"greet/SKILL.md": b"---\nname: greet\n---\n"})
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}) as http:
        response = await http.put("/sandboxes/t.coder.t1", json=spec_json(changed))
        assert response.status_code == 507
        assert response.json()["detail"] == (
            f"sandbox t.coder.t1: no space left on the disk of the sandbox service "
            f"({sandbox_dir}, AGENTCTL_SANDBOX_DIR): No space left on device"
        )
        assert (await http.get("/ok")).status_code == 200
    with pytest.raises(SandboxFull, match="no space left on the disk of the sandbox service"):
        await client.ensure("t.coder.t1", changed)


async def test_each_incarnation_of_an_agent_has_sandboxes_of_its_own(
    client: SandboxClient,
) -> None:
    """An agent deleted and created again under its name (a new incarnation) gets new
    sandboxes, whether the old ones are removed yet or not; removing the old incarnation's
    takes its assistant and thread sandboxes and nothing else."""
    old_pool, new_pool = PlatformPool(client, SandboxSpec()), PlatformPool(client, SandboxSpec())
    for key in (SandboxKey("coder", None, "old1"), SandboxKey("coder", "t1", "old1")):
        await (await old_pool.acquire(key)).aexecute("echo old-secret > notes.txt")
    fresh = await new_pool.acquire(SandboxKey("coder", None, "new2"))
    seen = await fresh.aexecute("cat notes.txt")
    assert seen.exit_code != 0
    assert "old-secret" not in seen.output
    await (await old_pool.acquire(SandboxKey("other", None, "old1"))).aexecute("true")

    names = [info.name for info in await client.list_sandboxes()]
    assert names == ["a.coder~~new2", "a.coder~~old1", "a.other~~old1", "t.coder~~old1.t1"]
    for name in names:
        parsed = SandboxKey.of_name(name)
        assert parsed is not None
        assert parsed.name == name
    removed: list[str] = []
    await remove_sandboxes_of(client, sandbox_owner("coder", "old1"), removed)
    assert removed == ["a.coder~~old1", "t.coder~~old1.t1"]
    listed = [info.name for info in await client.list_sandboxes()]
    assert listed == ["a.coder~~new2", "a.other~~old1"]
