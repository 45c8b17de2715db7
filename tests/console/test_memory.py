"""The Memory view: a signed-in user edits their /memories/user/AGENTS.md and the agent's
next conversation has it; the revision's instructions, skills and subagents are shown read
only; without a signed-in user the view says memory needs one."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from agentctl.runtime.namespaces import user_namespace
from agentctl.testing.identity import IdpBServer
from tests.console.conftest import SKILL, TEMPLATE, DevUrl, OpenConsole, memory_project
from tests.server.conftest import ALICE, sdk, with_auth

MARKER = "Always answer in French (memory marker 7f3a)."


async def test_a_user_edits_their_memory_and_the_next_conversation_has_it(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = memory_project(tmp_path / "source")
    url = dev_url(with_auth(project, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env))
    token = idp_b.mint(ALICE, expires_in=3600)
    async with open_console(url) as console:
        page = console.page
        await console.open("memory")
        await console.sign_in(token)
        await console.go("Memory")
        await expect(page.get_by_test_id("memory-new")).to_be_visible()
        editor = page.get_by_label("Your memory: /memories/user/AGENTS.md")
        await expect(editor).to_have_value(TEMPLATE)
        # The revision's own files, read only.
        await expect(page.get_by_test_id("instructions")).to_have_text("You chat.\n")
        skill = page.locator("details", has_text="Reviews drafts")
        await skill.locator("summary").click()
        await expect(skill.locator("pre")).to_have_text(SKILL)
        writer = page.locator("details", has_text="Writes prose")
        await writer.locator("summary").click()
        await expect(writer.locator("pre")).to_have_text("You write.\n")

        await editor.fill(f"{TEMPLATE}{MARKER}\n")
        await page.get_by_role("button", name="Save").click()
        await expect(page.get_by_role("status").filter(has_text="Saved")).to_be_visible()
        await page.evaluate("window.scrollTo(0, 0)")
        await console.screenshot("memory")

        # In the store, where the agent reads it.
        alice = sdk(url, token=token)
        try:
            item = await alice.store.get_item(list(user_namespace("chat", ALICE)), "/AGENTS.md")
        finally:
            await alice.aclose()
        assert item is not None
        assert item["value"]["content"] == f"{TEMPLATE}{MARKER}\n"

        # A reload shows the saved file, no longer the template.
        await page.reload()
        await expect(editor).to_have_value(f"{TEMPLATE}{MARKER}\n")
        await expect(page.get_by_test_id("memory-new")).to_have_count(0)

        # A new conversation: the agent's system prompt holds the edit (the scripted model
        # answers with the prompt it was given).
        await console.go("Chat")
        await console.send("@say {system}")
        await console.wait_idle()
        await expect(page.locator(".message.ai").last).to_contain_text(MARKER)
        await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        await console.screenshot("memory-in-chat")


async def test_without_a_signed_in_user_memory_is_not_offered(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(memory_project(tmp_path / "open"))
    async with open_console(url) as console:
        await console.open("memory")
        await expect(console.page.get_by_test_id("memory-needs-user")).to_have_text(
            "Memory needs a signed-in user, and this server signs no users in: add [auth] to "
            "agent.toml."
        )
        await expect(console.page.locator("textarea")).to_have_count(0)
        await expect(console.page.get_by_test_id("instructions")).to_have_text("You chat.\n")
        await console.screenshot("memory-no-user")
