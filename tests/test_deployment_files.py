"""The deployment files — Dockerfile, compose.yaml, deploy/nginx.conf, deploy/k8s/ — agree with
the settings registry (`agentctl.settings`) and with one another, and the docs describing them
are up to date. Pure file checks: nothing is built, started or sent to a cluster.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentctl.errors import SettingsError
from agentctl.settings import BY_NAME, SETTINGS, parse

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
GUIDE = ROOT / "docs" / "deployment.md"

# Set by the Dockerfile for the Python interpreter, not for agentctl: the only variables
# allowed on the agentctl containers that are not settings of the registry.
INTERPRETER_ENV = frozenset({"PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"})
# Manifests that `kubectl apply -k deploy/k8s` must not apply: a template of the Secret (it
# would overwrite the real one with placeholders) and datastores for evaluation only.
NEVER_KUSTOMIZED = frozenset({"secret.example.yaml", "dev-datastores.yaml"})
# Optional manifests: the guide says how to add them to the kustomization.
OPTIONAL = frozenset({"ingress.yaml"})

# `${NAME}`, `${NAME:-default}`, `${NAME:?error}` and the like, as compose interpolates them.
INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")
# The password of a URL: `scheme://user:PASSWORD@host`.
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/@\s:]*:(?P<password>[^/@\s]*)@", re.I)


# --- reading the files ---------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """The instructions of the Dockerfile's final stage, as (INSTRUCTION, arguments)."""
    text = (ROOT / "Dockerfile").read_text()
    text = re.sub(r"^[ \t]*#.*\n", "", text, flags=re.M)  # comments, parser directives
    text = re.sub(r"\\\n", " ", text)  # line continuations
    instructions = [line.split(None, 1) for line in text.splitlines() if line.strip()]
    stages = [i for i, (name, *_) in enumerate(instructions) if name.upper() == "FROM"]
    return [(name.upper(), rest[0] if rest else "") for name, *rest in instructions[stages[-1] :]]


def dockerfile_args(instruction: str) -> list[str]:
    return [args for name, args in dockerfile() if name == instruction]


def image_env() -> dict[str, str]:
    """The variables the image sets (ENV of the final stage)."""
    env: dict[str, str] = {}
    for args in dockerfile_args("ENV"):
        words = shlex.split(args)
        if "=" not in words[0]:  # the legacy `ENV NAME value` form
            env[words[0]] = " ".join(words[1:])
        else:
            for word in words:
                name, value = word.split("=", 1)
                env[name] = value
    return env


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return data


def agentctl_services() -> dict[str, dict[str, Any]]:
    """The compose services built from the Dockerfile: the agentctl replicas."""
    return {name: svc for name, svc in compose()["services"].items() if "build" in svc}


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the `- NAME=value` form
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {name: "" if value is None else str(value) for name, value in env.items()}


def interpolated(value: str) -> str | None:
    """What compose makes of `value` when no variable is set: defaults applied, or None when
    a variable without a default decides it."""
    undecided = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal undecided
        if match["op"] in (":-", "-"):
            return match["arg"]
        undecided = True
        return ""

    result = INTERPOLATION.sub(substitute, value)
    return None if undecided else result


def compose_settings(service: dict[str, Any]) -> dict[str, str]:
    """The settings one replica runs with, as far as the files decide them."""
    values = dict(image_env())
    for name, value in environment(service).items():
        resolved = interpolated(value)
        if resolved:  # empty is unset: the image's value or the default applies
            values[name] = resolved
    return values


def nginx() -> str:
    return re.sub(r"#.*", "", (DEPLOY / "nginx.conf").read_text())


def nginx_directives(name: str) -> list[str]:
    return [args.strip() for args in re.findall(rf"^\s*{name}\s+([^;]*);", nginx(), re.M)]


def manifests(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def all_manifests() -> list[dict[str, Any]]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in manifests(path)]


def manifest(kind: str, name: str, path: Path | None = None) -> dict[str, Any]:
    found = [
        doc
        for doc in (manifests(path) if path else all_manifests())
        if doc["kind"] == kind and doc["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"expected one {kind} {name!r} in deploy/k8s/, found {len(found)}"
    return found[0]


def deployment() -> dict[str, Any]:
    return manifest("Deployment", "agentctl", K8S / "deployment.yaml")


def container() -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment()["spec"]["template"]["spec"]["containers"]
    [agentctl] = [c for c in containers if c["name"] == "agentctl"]
    return agentctl


def env_sources() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ConfigMaps and Secrets the agentctl container takes its environment from."""
    refs = container().get("envFrom", [])
    config_maps = [
        manifest("ConfigMap", r["configMapRef"]["name"]) for r in refs if "configMapRef" in r
    ]
    secrets = [manifest("Secret", r["secretRef"]["name"]) for r in refs if "secretRef" in r]
    return config_maps, secrets


def secret_data(secret: dict[str, Any]) -> dict[str, str]:
    assert "data" not in secret, "write the Secret template with stringData: it is read by people"
    return {k: str(v) for k, v in secret.get("stringData", {}).items()}


def k8s_settings() -> dict[str, str]:
    """The settings the pods run with: the image's, then envFrom in order, then env."""
    values = dict(image_env())
    config_maps, secrets = env_sources()
    for config_map in config_maps:
        values.update({k: str(v) for k, v in config_map.get("data", {}).items()})
    for secret in secrets:
        values.update(secret_data(secret))
    values.update({e["name"]: str(e["value"]) for e in container().get("env", []) if "value" in e})
    return values


def setting(values: dict[str, str], name: str) -> Any:
    return parse(BY_NAME[name], values.get(name))


def container_port(port: int | str) -> int:
    """A port of the agentctl container, by number or by name."""
    for declared in container()["ports"]:
        if port in (declared["containerPort"], declared.get("name")):
            return int(declared["containerPort"])
    raise AssertionError(f"the agentctl container has no port {port!r}")


def seconds(duration: str) -> float:
    """A compose or nginx duration (`45s`, `1m30s`, `3600`) in seconds."""
    if duration.isdigit():
        return float(duration)
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)", duration)
    assert parts, f"not a duration: {duration!r}"
    return sum(float(number) * units[unit] for number, unit in parts)


# --- every variable is a setting, with a value of its kind ----------------------------------


def variables_set() -> dict[str, dict[str, Any]]:
    """Where each variable given to agentctl is set: {place: {variable: value}}."""
    config_maps, secrets = env_sources()
    places: dict[str, dict[str, Any]] = {"Dockerfile ENV": image_env()}
    for name, service in agentctl_services().items():
        places[f"compose.yaml: services.{name}.environment"] = environment(service)
    for config_map in config_maps:
        places[f"ConfigMap {config_map['metadata']['name']}"] = config_map.get("data", {})
    for secret in secrets:
        places[f"Secret {secret['metadata']['name']}"] = secret_data(secret)
    env = container().get("env", [])
    places["Deployment agentctl env"] = {e["name"]: e.get("value") for e in env}
    return places


def test_every_variable_given_to_agentctl_is_a_serve_setting() -> None:
    for place, variables in variables_set().items():
        for name in variables:
            if place == "Dockerfile ENV" and name in INTERPRETER_ENV:
                continue
            assert name in BY_NAME, f"{place}: {name} is not a setting of agentctl.settings"
            scope = BY_NAME[name].scope
            assert scope in ("serve", "sandbox"), f"{place}: {name} is not read by serve"


def test_every_value_is_of_its_settings_kind() -> None:
    for place, variables in variables_set().items():
        for name, value in variables.items():
            resolved = interpolated(str(value)) if value is not None else None
            if name in BY_NAME and resolved:
                try:
                    parse(BY_NAME[name], resolved)
                except SettingsError as exc:
                    pytest.fail(f"{place}: {exc}")


def test_the_agentctl_services_take_no_variables_from_elsewhere() -> None:
    for name, service in agentctl_services().items():
        assert "env_file" not in service, f"{name}: env_file would bypass the settings check"


# --- secrets --------------------------------------------------------------------------------

SECRETS = [s.name for s in SETTINGS if s.secret]


def test_compose_takes_secrets_from_the_environment() -> None:
    for service_name, service in agentctl_services().items():
        for name, value in environment(service).items():
            where = f"compose.yaml: services.{service_name}.environment.{name}"
            if name in SECRETS:
                match = INTERPOLATION.fullmatch(value)
                assert match, f"{where}: a secret is never written here: ${{{name}:?...}}"
                assert match["op"] in (None, "?", ":?"), (
                    f"{where}: a secret comes from the environment or .env, with no default: "
                    f"${{{name}:?set {name} in .env}}"
                )
            for url in URL_PASSWORD.finditer(INTERPOLATION.sub("", value)):
                assert not url["password"], f"{where}: interpolate the password, never write it"


def test_compose_secrets_are_listed_empty_in_the_example_env_file() -> None:
    text = (ROOT / "compose.yaml").read_text()
    required = {m["name"] for m in INTERPOLATION.finditer(text) if m["op"] in ("?", ":?")}
    example = (DEPLOY / "compose.env.example").read_text()
    given = dict(re.findall(r"^(\w+)=(.*)$", example, re.M))
    mentioned = set(re.findall(r"^#?\s*(\w+)=", example, re.M))
    for name in sorted(required):
        assert given.get(name) == "", f"deploy/compose.env.example: {name}= (empty) is missing"
    used = {m["name"] for m in INTERPOLATION.finditer(text)}
    assert mentioned <= used, f"compose.yaml does not use {mentioned - used}"


def test_no_secret_in_the_config_map() -> None:
    config_maps, _ = env_sources()
    for config_map in config_maps:
        data = config_map.get("data", {})
        where = f"ConfigMap {config_map['metadata']['name']}"
        for name in SECRETS:
            assert name not in data, f"{where}: {name} is a secret: put it in the Secret"
        for name, value in data.items():
            assert not URL_PASSWORD.search(str(value)), f"{where}: {name} holds a password"


def test_the_secret_template_holds_placeholders_only() -> None:
    _, secrets = env_sources()
    assert secrets, "the Deployment takes no Secret"
    template = K8S / "secret.example.yaml"
    for secret in secrets:
        assert secret in manifests(template), f"{secret['metadata']['name']}: not in {template}"
        for name, value in secret_data(secret).items():
            if name in SECRETS:
                assert value == "CHANGE-ME", f"{template.name}: {name}: write CHANGE-ME"
            for url in URL_PASSWORD.finditer(value):
                assert url["password"] in ("", "CHANGE-ME"), f"{template.name}: {name}"


# --- the image ------------------------------------------------------------------------------


def test_the_image_runs_agentctl_serve_as_a_non_root_user() -> None:
    assert dockerfile_args("CMD") == ['["agentctl", "serve"]']
    [user] = dockerfile_args("USER")
    uid = user.split(":")[0]
    assert uid.isdigit(), "USER: a numeric uid, so Kubernetes' runAsNonRoot can check it"
    assert int(uid) != 0, "USER: not root"
    assert dockerfile_args("STOPSIGNAL") in ([], ["SIGTERM"]), "serve drains on SIGTERM"
    assert image_env()["AGENTCTL_DATA_DIR"] == "/data"
    assert any("/data" in args for args in dockerfile_args("VOLUME"))


def test_the_image_is_built_from_python_slim_with_valid_extras() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2, "a multi-stage build"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    [default] = set(re.findall(r"^ARG EXTRAS=(.*)$", text, re.M))
    assert default == "providers,otel"
    build_args = [svc["build"]["args"]["EXTRAS"] for svc in agentctl_services().values()]
    for value in [default, *(interpolated(v) or "" for v in build_args)]:
        for extra in filter(None, value.split(",")):
            assert extra in extras, f"EXTRAS: {extra!r} is not an extra of pyproject.toml"


def test_the_image_health_check_asks_ok_on_the_configured_port() -> None:
    [check] = dockerfile_args("HEALTHCHECK")
    assert "/ok" in check
    assert "AGENTCTL_PORT" in check, "the health check follows AGENTCTL_PORT"


# --- ports ----------------------------------------------------------------------------------


def image_port() -> int:
    port: int = setting(image_env(), "AGENTCTL_PORT")
    assert dockerfile_args("EXPOSE") == [str(port)], f"EXPOSE {port}, the port serve listens on"
    return port


def test_compose_ports_agree() -> None:
    image_port()
    services = agentctl_services()
    assert len(services) >= 2, "compose.yaml runs at least two replicas"
    [upstream] = re.findall(r"upstream\s+([\w-]+)\s*\{([^}]*)\}", nginx())
    name, body = upstream
    servers = dict(re.findall(r"^\s*server\s+([\w.-]+):(\d+)\b", body, re.M))
    assert set(servers) == set(services), "deploy/nginx.conf balances over every replica"
    for service_name, service in services.items():
        port = setting(compose_settings(service), "AGENTCTL_PORT")
        assert int(servers[service_name]) == port, f"nginx upstream {service_name}: port {port}"
    assert nginx_directives("proxy_pass") == [f"http://{name}"]


def test_the_load_balancer_publishes_the_documented_port() -> None:
    [lb] = [svc for svc in compose()["services"].values() if svc["image"].startswith("nginx")]
    assert any(v.startswith("./deploy/nginx.conf:") for v in lb["volumes"])
    [published] = lb["ports"]
    host_port, inner_port = str(published).split(":")[-2:]
    listen = {re.findall(r"(\d+)", args)[0] for args in nginx_directives("listen")}
    assert listen == {inner_port}, "nginx listens on the port compose publishes"
    for service_name, service in agentctl_services().items():
        public = compose_settings(service).get("AGENTCTL_PUBLIC_URL", "")
        assert public == f"http://localhost:{host_port}", f"{service_name}: AGENTCTL_PUBLIC_URL"
    assert f"localhost:{host_port}" in GUIDE.read_text()


def test_kubernetes_ports_agree() -> None:
    port = setting(k8s_settings(), "AGENTCTL_PORT")
    assert [p["containerPort"] for p in container()["ports"]] == [port]
    paths = {"readinessProbe": "/ok", "livenessProbe": "/ok?live=true", "startupProbe": "/ok"}
    for probe, path in paths.items():
        check = container()[probe]["httpGet"]
        assert check["path"] == path, f"{probe}: GET {path}"
        assert container_port(check["port"]) == port, f"{probe}: port {port}"
    service = manifest("Service", "agentctl", K8S / "service.yaml")
    for service_port in service["spec"]["ports"]:
        assert container_port(service_port["targetPort"]) == port, "Service targetPort"
    ingress = manifest("Ingress", "agentctl", K8S / "ingress.yaml")
    target = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert target["name"] == "agentctl", "the Ingress routes to the Service"
    if "name" in target["port"]:
        assert target["port"]["name"] in {p.get("name") for p in service["spec"]["ports"]}
    else:
        assert target["port"]["number"] in {p["port"] for p in service["spec"]["ports"]}


def test_compose_starts_each_service_once_what_it_needs_is_healthy() -> None:
    services = compose()["services"]
    replicas = agentctl_services()
    [lb] = [name for name, svc in services.items() if svc["image"].startswith("nginx")]
    needs = {name: ["postgres", "redis"] for name in replicas} | {lb: sorted(replicas)}
    for name, needed in needs.items():
        for dependency in needed:
            condition = services[name]["depends_on"][dependency]["condition"]
            assert condition == "service_healthy", f"{name}: wait until {dependency} is healthy"
            # The replicas' health check is the image's HEALTHCHECK.
            assert dependency in replicas or "healthcheck" in services[dependency]


# --- stopping: longer than the drain --------------------------------------------------------


def test_compose_waits_longer_than_the_drain() -> None:
    for name, service in agentctl_services().items():
        grace = setting(compose_settings(service), "AGENTCTL_SHUTDOWN_GRACE_SECONDS")
        assert "stop_grace_period" in service, f"{name}: stop_grace_period (Docker's is 10 s)"
        assert seconds(service["stop_grace_period"]) > grace, f"{name}: stop_grace_period"


def test_kubernetes_waits_longer_than_the_pre_stop_sleep_and_the_drain() -> None:
    spec = deployment()["spec"]["template"]["spec"]
    grace = setting(k8s_settings(), "AGENTCTL_SHUTDOWN_GRACE_SECONDS")
    pre_stop = container()["lifecycle"]["preStop"]
    if "sleep" in pre_stop:
        sleep = float(pre_stop["sleep"]["seconds"])
    else:
        command = pre_stop["exec"]["command"]
        assert command[0] == "sleep", "preStop: a sleep, so the Service stops routing first"
        sleep = float(command[1])
    assert sleep > 0
    assert spec["terminationGracePeriodSeconds"] > sleep + grace


# --- Kubernetes: the rest -------------------------------------------------------------------


def test_the_pods_are_hardened_and_keep_no_state() -> None:
    spec = deployment()["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    # A Service named agentctl would inject AGENTCTL_PORT=tcp://... into the pods.
    assert spec["enableServiceLinks"] is False
    data_dir = k8s_settings()["AGENTCTL_DATA_DIR"]
    [mount] = [m for m in container()["volumeMounts"] if m["mountPath"] == data_dir]
    [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume, f"{data_dir}: an emptyDir (PostgreSQL holds what lasts)"
    assert deployment()["spec"]["replicas"] >= 2


def test_selectors_and_targets_name_the_agentctl_pods() -> None:
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    selectors = [
        deployment()["spec"]["selector"]["matchLabels"],
        manifest("Service", "agentctl")["spec"]["selector"],
        manifest("PodDisruptionBudget", "agentctl")["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= labels.items()
    hpa = manifest("HorizontalPodAutoscaler", "agentctl")["spec"]
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "agentctl"}
    assert hpa["scaleTargetRef"] == target
    assert hpa["minReplicas"] >= 2


def test_the_kustomization_lists_files_that_exist() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    for name in listed:
        assert (K8S / name).is_file(), f"kustomization.yaml: {name} does not exist"
    assert not listed & NEVER_KUSTOMIZED, f"never apply {listed & NEVER_KUSTOMIZED} with -k"
    files = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    forgotten = files - listed - NEVER_KUSTOMIZED - OPTIONAL
    assert not forgotten, f"kustomization.yaml: list {forgotten} (or say why not)"


# --- nginx: friendly to server-sent events --------------------------------------------------


def test_nginx_streams_events_unbuffered_over_keep_alive_connections() -> None:
    assert nginx_directives("proxy_buffering") == ["off"]
    [timeout] = nginx_directives("proxy_read_timeout")
    assert seconds(timeout) >= 600, "proxy_read_timeout: streams stay open for long"
    assert nginx_directives("proxy_http_version") == ["1.1"]
    assert re.search(r"^\s*keepalive\s+\d+;", nginx(), re.M), "upstream keepalive"
    headers = {
        args.split(None, 1)[0].lower(): args.split(None, 1)[1]
        for args in nginx_directives("proxy_set_header")
    }
    assert headers["connection"] == '""', "keep-alive to the upstream needs Connection cleared"
    for header in ("Last-Event-ID", "Authorization", "x-api-key"):
        variable = "$http_" + header.lower().replace("-", "_")
        assert headers.get(header.lower()) == variable, f"pass {header} through"
    assert "proxy_pass_request_headers" not in nginx()


# --- docs -----------------------------------------------------------------------------------


def settings_doc() -> str:
    spec = importlib.util.spec_from_file_location(
        "settings_doc", ROOT / "scripts" / "settings_doc.py"
    )
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered: str = module.render()
    return rendered


def test_the_settings_doc_is_generated_from_the_registry() -> None:
    assert (ROOT / "docs" / "settings.md").read_text() == settings_doc(), (
        "docs/settings.md is stale: python scripts/settings_doc.py > docs/settings.md"
    )


@pytest.mark.parametrize(
    "path",
    [
        "Dockerfile",
        ".dockerignore",
        "compose.yaml",
        "deploy/nginx.conf",
        "deploy/compose.env.example",
        *sorted(f"deploy/k8s/{path.name}" for path in K8S.glob("*.yaml")),
        "settings.md",
    ],
)
def test_the_deployment_guide_mentions(path: str) -> None:
    assert path in GUIDE.read_text()


def test_the_readme_links_the_deployment_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/deployment.md)" in readme
    assert "(docs/settings.md)" in readme
