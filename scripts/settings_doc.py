"""Print docs/settings.md: every setting of the registry (`agentctl.settings.SETTINGS`).

python scripts/settings_doc.py > docs/settings.md   # regenerate it after changing a setting

tests/test_deployment_files.py fails while the file differs from this script's output.
"""

from __future__ import annotations

from agentctl.settings import SETTINGS, Setting

HEADER = """\
# Settings

`agentctl serve` reads its settings from environment variables, once, at start: the
Dockerfile, [compose.yaml](../compose.yaml) and the Kubernetes manifests of
[deploy/k8s/](../deploy/k8s/) set them ([deployment guide](deployment.md)). `agentctl deploy`
reads the ones of scope `deploy`, and `PLATFORM_API_KEY` too, from its environment or the
project's `.env`. Those of scope `sandbox` configure the platform sandbox
([sandbox.md](sandbox.md)): `agentctl serve` and `agentctl dev` read them when they run
sandboxes themselves, `agentctl sandbox-server` when it runs them for every replica.
`agentctl dev` also reads the request and connection limits (`AGENTCTL_MAX_*`,
`AGENTCTL_*_TIMEOUT_SECONDS`: [server.md](server.md#limits)); `agentctl deploy` and
`agentctl dev` read the revision limits (`AGENTCTL_MAX_REVISION_MB`,
`AGENTCTL_MAX_REVISION_FILES`: [project-layout.md](project-layout.md#size)).

- An empty value is the same as an unset one: the default applies.
- Booleans take `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`); numbers must be greater
  than 0 (`AGENTCTL_PORT` may be 0: any free port). A value of the wrong kind stops the server
  with an error naming the variable.
- Secrets are never printed, logged or returned by the API: keep them in a Kubernetes Secret
  or in the environment, never in a ConfigMap or a committed file. `DATABASE_URL` and
  `REDIS_URL` carry passwords when the servers need them: keep them with the secrets.
- The deployed project's own variables (model keys, MCP headers, `[auth]` settings) are not
  set on the server: they travel with `agentctl deploy`, encrypted.

This page is generated from `src/agentctl/settings.py` by `scripts/settings_doc.py`.
"""

KINDS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def render() -> str:
    rows = [
        "| variable | scope | type | default | meaning |",
        "|---|---|---|---|---|",
    ]
    rows += [_row(setting) for setting in SETTINGS]
    return f"{HEADER}\n" + "\n".join(rows) + "\n"


def _row(setting: Setting) -> str:
    kind = " \\| ".join(f"`{c}`" for c in setting.choices) or KINDS[setting.kind]
    default = "unset" if setting.default is None else f"`{_value(setting.default)}`"
    meaning = setting.help.replace("|", "\\|") + (" **Secret.**" if setting.secret else "")
    return f"| `{setting.name}` | {setting.scope} | {kind} | {default} | {meaning} |"


def _value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


if __name__ == "__main__":
    print(render(), end="")
