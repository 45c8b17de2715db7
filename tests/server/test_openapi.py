"""`/openapi.json` tells the truth: what each route answers and the errors it can give,
in the shape it gives them, with the constraints it checks; a 405 names every method."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import jsonschema

from tests.server.conftest import Running, user


async def openapi(http: httpx.AsyncClient) -> dict[str, Any]:
    doc: dict[str, Any] = (await http.get("/openapi.json")).json()
    return doc


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), p, op) for p, item in doc["paths"].items() for m, op in item.items()]


async def test_every_error_is_the_detail_shape(http: httpx.AsyncClient) -> None:
    doc = await openapi(http)
    schemas = doc["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert schemas["ErrorOut"]["required"] == ["detail"]
    for method, path, op in operations(doc):
        responses = op["responses"]
        assert any(code.startswith("2") for code in responses), (method, path)
        assert "403" in responses, (method, path)
        if "requestBody" in op or op.get("parameters"):
            assert "422" in responses, (method, path)
        if "requestBody" in op:
            assert "413" in responses, (method, path)
        if "{" in path:
            assert "404" in responses, (method, path)
        for code, answer in responses.items():
            if code.startswith("4"):
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, code)


async def test_constraints_are_documented(http: httpx.AsyncClient) -> None:
    doc = await openapi(http)
    schemas = doc["components"]["schemas"]
    for method, path, op in operations(doc):
        for param in op.get("parameters", []):
            if param["name"] in ("thread_id", "run_id", "cron_id") and param["in"] == "path":
                assert param["schema"]["format"] == "uuid", (method, path)
    modes = schemas["RunCreate"]["properties"]["stream_mode"]["anyOf"]
    assert "messages-tuple" in modes[0]["enum"]
    assert modes[1]["items"]["enum"] == modes[0]["enum"]
    assert schemas["ItemPut"]["properties"]["namespace"]["minItems"] == 1
    assert schemas["ThreadSearch"]["properties"]["offset"]["maximum"] == 10**12
    conflicts = {path for method, path, op in operations(doc) if "409" in op["responses"]}
    assert {"/threads", "/assistants", "/runs", "/threads/{thread_id}/runs"} <= conflicts


def check(doc: dict[str, Any], method: str, path: str, response: httpx.Response) -> None:
    """`response` is what the document says `method path` answers with its status."""
    answer = doc["paths"][path][method.lower()]["responses"][str(response.status_code)]
    schema = answer["content"]["application/json"]["schema"]
    jsonschema.validate(response.json(), {**schema, "components": doc["components"]})


async def test_answers_match_their_documented_models(
    agent: Running, http: httpx.AsyncClient
) -> None:
    doc = await openapi(http)
    thread = await http.post("/threads", json={"metadata": {"k": "v"}})
    check(doc, "POST", "/threads", thread)
    thread_id = thread.json()["thread_id"]
    run = await http.post(f"/threads/{thread_id}/runs", json={"assistant_id": "demo"})
    check(doc, "POST", "/threads/{thread_id}/runs", run)
    await http.get(f"/threads/{thread_id}/runs/{run.json()['run_id']}/join")
    ran = await http.post(
        f"/threads/{thread_id}/runs/wait", json={"assistant_id": "demo", "input": user("hi")}
    )
    assert ran.status_code == 200
    for path, real in [
        ("/threads/{thread_id}", f"/threads/{thread_id}"),
        ("/threads/{thread_id}/state", f"/threads/{thread_id}/state"),
        ("/threads/{thread_id}/history", f"/threads/{thread_id}/history"),
        ("/threads/{thread_id}/runs", f"/threads/{thread_id}/runs"),
        ("/assistants/{assistant_id}", "/assistants/demo"),
        ("/ok", "/ok"),
        ("/info", "/info"),
        ("/agent", "/agent"),
    ]:
        check(doc, "GET", path, await http.get(real))
    for path, body in [
        ("/threads/search", {"select": ["thread_id", "status"]}),
        ("/threads/count", {}),
        ("/assistants/search", {}),
        ("/runs/crons/search", {}),
        ("/store/items/search", {}),
        ("/store/namespaces", {}),
        ("/runs/crons", {"assistant_id": "demo", "schedule": "0 0 1 1 *"}),
    ]:
        check(doc, "POST", path, await http.post(path, json=body))
    await http.put("/store/items", json={"namespace": ["n"], "key": "k", "value": {"v": 1}})
    check(doc, "GET", "/store/items", await http.get("/store/items?namespace=n&key=k"))
    state = await http.post(f"/threads/{thread_id}/state", json={"values": {}, "as_node": "model"})
    check(doc, "POST", "/threads/{thread_id}/state", state)
    for method, path, real in [
        ("GET", "/threads/{thread_id}", f"/threads/{uuid.uuid4()}"),
        ("GET", "/threads/{thread_id}", "/threads/nope"),
        ("POST", "/threads", "/threads"),
    ]:
        body = {"thread_id": thread_id} if method == "POST" else None
        check(doc, method, path, await http.request(method, real, json=body))


async def test_405_allows_every_method_of_the_path(http: httpx.AsyncClient) -> None:
    thread = f"/threads/{uuid.uuid4()}"
    for method, path, allowed in [
        ("PUT", thread, {"GET", "PATCH", "DELETE"}),
        ("DELETE", "/runs/wait", {"POST"}),
        ("POST", "/store/items", {"GET", "PUT", "DELETE"}),
        ("GET", "/threads", {"POST"}),
    ]:
        response = await http.request(method, path)
        assert response.status_code == 405
        assert set(response.headers["allow"].split(", ")) == allowed, path
        assert "not allowed" in response.json()["detail"]
