"""The long-term memory store: items under namespaces, shared by the agent and API clients.

A signed-in user reaches only their own namespaces, those under `["users", <their id>]`
(their agent memory is there too); anything else is 403, and searches are kept inside.

`GET /store/items` takes the namespace as one dotted string (`?namespace=a.b&key=k`), as
the SDK sends it; the other endpoints take it as a JSON list of labels.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from langgraph.store.base import InvalidNamespaceError
from pydantic import Field, field_validator
from starlette.responses import Response

from agentctl.errors import Unprocessable
from agentctl.server import views
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.fields import (
    Body,
    Limit,
    Namespace,
    NamespacePrefix,
    Offset,
    StoreFilter,
    StoreKey,
    check_label,
    check_namespace,
    check_store_key,
)
from agentctl.server.schemas import ItemOut, ItemsOut, NamespacesOut

router = APIRouter(tags=["store"])


# How deep a listed namespace is cut: PostgreSQL takes it as a 32-bit integer.
MaxDepth = Annotated[int, Field(ge=1, le=2**31 - 1)]


NO_INDEX = "the store has no embedding index to search by meaning (agentctl configures none)"


class ItemPut(Body):
    namespace: Namespace
    key: StoreKey
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = None
    ttl: float | None = None

    @field_validator("ttl")
    @classmethod
    def _no_expiry(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError(
                "items do not expire on this server (its store sweeps none) — leave ttl out "
                "and delete the item when it is no longer wanted"
            )
        return value

    @field_validator("index")
    @classmethod
    def _no_fields_to_embed(cls, value: Literal[False] | list[str] | None) -> Any:
        if value:
            raise ValueError(f"{NO_INDEX} — leave index out, or send false")
        return value


class ItemDelete(Body):
    namespace: Namespace
    key: StoreKey


class ItemSearch(Body):
    namespace_prefix: NamespacePrefix = Field(default_factory=list)
    filter: StoreFilter | None = None
    limit: Limit = 10
    offset: Offset = 0
    query: str | None = None
    refresh_ttl: bool | None = None

    @field_validator("query")
    @classmethod
    def _no_meaning(cls, value: str | None) -> str | None:
        if value:
            raise ValueError(f"{NO_INDEX} — leave query out and narrow with filter")
        return value


class NamespaceList(Body):
    prefix: NamespacePrefix | None = None
    suffix: NamespacePrefix | None = None
    max_depth: MaxDepth | None = None
    limit: Limit = 100
    offset: Offset = 0


def query_namespace(dotted: str) -> tuple[str, ...]:
    """`?namespace=a.b` as labels, or a 422 naming what is wrong with it."""
    try:
        return tuple(check_namespace([check_label(label) for label in dotted.split(".") if dotted]))
    except ValueError as exc:
        raise Unprocessable(f"query parameter namespace: {exc}") from None


def item_view(item: Any) -> dict[str, Any]:
    view = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }
    score = getattr(item, "score", None)
    if score is not None:
        view["score"] = score
    return view


@router.put("/store/items", status_code=204)
async def put_item(request: Request, body: ItemPut) -> Response:
    store = server_of(request).storage.store
    namespace = caller_of(request).namespace(tuple(body.namespace))
    try:
        await store.aput(namespace, body.key, body.value, index=body.index, ttl=body.ttl)
    except InvalidNamespaceError as exc:
        raise Unprocessable(f"namespace: {exc}") from None
    return Response(status_code=204)


@router.get("/store/items", response_model=ItemOut | None)
async def get_item(
    request: Request,
    key: str,
    namespace: Annotated[str, Query()] = "",
    refresh_ttl: bool | None = None,
) -> Response:
    store = server_of(request).storage.store
    labels = caller_of(request).namespace(query_namespace(namespace))
    try:
        check_store_key(key)
    except ValueError as exc:
        raise Unprocessable(f"query parameter key: {exc}") from None
    try:
        item = await store.aget(labels, key, refresh_ttl=refresh_ttl)
    except InvalidNamespaceError as exc:
        raise Unprocessable(f"namespace: {exc}") from None
    # A missing item is `null`, as the reference answers (the SDK then returns None).
    return views.json_response(None if item is None else item_view(item))


@router.delete("/store/items", status_code=204)
async def delete_item(request: Request, body: ItemDelete) -> Response:
    store = server_of(request).storage.store
    namespace = caller_of(request).namespace(tuple(body.namespace))
    try:
        await store.adelete(namespace, body.key)
    except InvalidNamespaceError as exc:
        raise Unprocessable(f"namespace: {exc}") from None
    return Response(status_code=204)


@router.post("/store/items/search", response_model=ItemsOut)
async def search_items(request: Request, body: ItemSearch | None = None) -> Response:
    store, caller = server_of(request).storage.store, caller_of(request)
    body = body or ItemSearch()
    prefix = caller.namespace_prefix(tuple(body.namespace_prefix))
    try:
        items = await store.asearch(
            prefix,
            query=body.query,
            filter=body.filter,
            limit=body.limit,
            offset=body.offset,
            refresh_ttl=body.refresh_ttl,
        )
    except InvalidNamespaceError as exc:
        raise Unprocessable(f"namespace_prefix: {exc}") from None
    mine = [item for item in items if caller.may_use(item.namespace)]
    return views.json_response({"items": [item_view(item) for item in mine]})


@router.post("/store/namespaces", response_model=NamespacesOut)
async def list_namespaces(request: Request, body: NamespaceList | None = None) -> Response:
    store, caller = server_of(request).storage.store, caller_of(request)
    body = body or NamespaceList()
    prefix = caller.namespace_prefix(tuple(body.prefix or ()))
    suffix = tuple(body.suffix or ())
    namespaces = await store.alist_namespaces(
        prefix=prefix or None,
        suffix=suffix or None,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    mine = [list(ns) for ns in namespaces if caller.may_use(ns)]
    return views.json_response({"namespaces": mine})
