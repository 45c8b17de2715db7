"""Prepared sandbox images and workspace templates, as an operator meets them: a sandbox runs
in the root filesystem prepared for its image and starts with its template's files, and what
is not prepared is refused with what to build and where.

The image here is a tiny one built from this machine's own `sh`, `prlimit` and `cat`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentctl.errors import SandboxRefused
from agentctl.sandbox.service import SandboxService, SandboxSpec
from agentctl.settings import SandboxSettings

PROGRAMS = ("/bin/sh", "/usr/bin/prlimit", "/usr/bin/cat")
THREAD = "t.demo.thread1"


def build_tiny_image(image: Path, programs: tuple[str, ...] = PROGRAMS) -> Path:
    """A root filesystem with `programs` and the libraries they load, each at its path on
    this machine, plus the /etc files the sandbox binds its own over."""
    for name in ("bin", "sbin", "lib", "lib64"):  # merged /usr: /bin -> usr/bin, ...
        if Path("/", name).is_symlink():
            target = Path("/", name).resolve().relative_to("/")
            (image / target).mkdir(parents=True, exist_ok=True)
            (image / name).symlink_to(target)
    for path in {*programs, *_libraries(programs)}:
        _copy_keeping_path(Path(path), image)
    etc = image / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    for name in ("passwd", "group", "hosts"):
        (etc / name).touch()
    (etc / "image-name").write_text("tiny\n")
    return image


def _libraries(programs: tuple[str, ...]) -> set[str]:
    listed = subprocess.run(["ldd", *programs], capture_output=True, text=True).stdout
    return {word for word in listed.split() if word.startswith("/") and not word.endswith(":")}


def _copy_keeping_path(path: Path, image: Path) -> None:
    real = path.resolve()
    copied = image / real.relative_to("/")
    copied.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(real, copied)
    alias = image / path.relative_to("/")
    if not os.path.lexists(alias):  # e.g. /bin/sh -> /usr/bin/dash
        alias.parent.mkdir(parents=True, exist_ok=True)
        alias.symlink_to(real)


@pytest.fixture
def images(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """AGENTCTL_SANDBOX_IMAGES_DIR, in a folder the sandbox user can reach (tmp_path is
    mode 700), holding the image `tiny`."""
    folder = Path(tempfile.mkdtemp(prefix="agentctl-images-"))
    folder.chmod(0o755)
    build_tiny_image(folder / "tiny")
    monkeypatch.setenv("AGENTCTL_SANDBOX_IMAGES_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "templates"
    folder.mkdir()
    monkeypatch.setenv("AGENTCTL_SANDBOX_TEMPLATES_DIR", str(folder))
    return folder


@asynccontextmanager
async def sandbox_service() -> AsyncIterator[SandboxService]:
    """The service as `agentctl serve` opens it, with the settings of the environment."""
    settings = SandboxSettings.from_env()
    assert settings.dir is not None, "use the sandbox_dir fixture"
    service = SandboxService(settings, Path(settings.dir))
    try:
        yield service
    finally:
        await service.aclose()


async def run(service: SandboxService, command: str, name: str = THREAD) -> str:
    finished = await service.execute(name, command)
    output = finished.output.decode()
    assert finished.exit_code == 0, output
    return output


async def test_a_sandbox_runs_in_the_image_prepared_for_it(
    sandbox_dir: Path, images: Path, templates: Path
) -> None:
    async with sandbox_service() as service:
        await service.ensure(THREAD, SandboxSpec(image="tiny"))
        said = await run(
            service, "cat /etc/image-name; [ -e /usr/bin/python3 ] || echo no python3 here"
        )
    assert said == "tiny\nno python3 here\n"


async def test_an_unprepared_image_is_refused_with_the_folder_to_build_it_in(
    sandbox_dir: Path, images: Path, templates: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTL_SANDBOX_FALLBACK_IMAGE", "none")
    async with sandbox_service() as service:
        with pytest.raises(SandboxRefused) as at_load:
            await service.check(SandboxSpec(image="python:3"))
        with pytest.raises(SandboxRefused) as at_create:
            await service.ensure(THREAD, SandboxSpec(image="python:3"))
        assert await service.list_sandboxes() == []
    expected = (
        "sandbox image 'python:3' is not prepared on this platform: build its root "
        f"filesystem into {images / 'python:3'} (see docs/sandbox.md)"
    )
    assert str(at_load.value) == expected
    assert str(at_create.value) == expected


async def test_an_image_without_prlimit_is_refused_naming_util_linux(
    sandbox_dir: Path, images: Path, templates: Path
) -> None:
    build_tiny_image(images / "no-prlimit", programs=("/bin/sh", "/usr/bin/cat"))
    async with sandbox_service() as service:
        with pytest.raises(SandboxRefused) as caught:
            await service.ensure(THREAD, SandboxSpec(image="no-prlimit"))
    assert str(caught.value) == (
        f"sandbox image 'no-prlimit' ({images / 'no-prlimit'}) lacks /usr/bin/prlimit: "
        "install util-linux in it"
    )


async def test_an_image_without_the_etc_files_is_refused_naming_the_file(
    sandbox_dir: Path, images: Path, templates: Path
) -> None:
    (build_tiny_image(images / "no-hosts") / "etc" / "hosts").unlink()
    async with sandbox_service() as service:
        with pytest.raises(SandboxRefused) as caught:
            await service.ensure(THREAD, SandboxSpec(image="no-hosts"))
    assert f"({images / 'no-hosts'}) lacks /etc/hosts" in str(caught.value)


async def test_a_new_sandbox_workspace_starts_as_a_copy_of_its_template(
    sandbox_dir: Path, images: Path, templates: Path
) -> None:
    (templates / "starter/src").mkdir(parents=True)
    (templates / "starter/README.md").write_text("from the template\n")
    (templates / "starter/src/main.sh").write_text("echo main\n")
    spec = SandboxSpec(image="tiny", template="starter")
    async with sandbox_service() as service:
        await service.ensure(THREAD, spec)
        said = await run(service, "cat README.md src/main.sh; sh src/main.sh")
        await run(service, "echo changed > README.md")
        await service.ensure("t.demo.thread2", spec)
        other = await run(service, "cat README.md", name="t.demo.thread2")
    assert said == "from the template\necho main\nmain\n"
    assert other == "from the template\n"  # each sandbox has its own copy
    assert (templates / "starter/README.md").read_text() == "from the template\n"


async def test_an_unknown_template_is_refused_but_a_missing_default_one_is_empty(
    sandbox_dir: Path, images: Path, templates: Path
) -> None:
    async with sandbox_service() as service:
        with pytest.raises(SandboxRefused) as caught:
            await service.ensure(THREAD, SandboxSpec(image="tiny", template="data-science"))
        await service.ensure(THREAD, SandboxSpec(image="host"))  # template "agent-deploy"
        listed = await run(service, "ls -A; echo listed")
    assert str(caught.value) == (
        "sandbox template 'data-science' is not prepared on this platform: put the files "
        f"the workspace starts with in {templates / 'data-science'}"
    )
    assert listed == "listed\n"
