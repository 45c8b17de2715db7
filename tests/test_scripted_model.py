"""Tests of `agentctl.testing`: the scripted OpenAI-compatible model server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from agentctl.testing import (
    DONE_TEXT,
    PLAIN_PREFIX,
    PROVIDERS,
    Reply,
    ScriptedModelServer,
    ScriptError,
    decide,
    parse_script,
)
from agentctl.testing.anthropic_wire import AnthropicWire
from agentctl.testing.script import Call, CallSpec, Fail, Say, Step, unknown_tools


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    # keep_alive=False: langchain-openai caches one async HTTP client per base URL, and pooled
    # connections must not outlive each test's event loop.
    with ScriptedModelServer(keep_alive=False) as scripted:
        yield scripted


def chat(server: ScriptedModelServer, **kwargs: Any) -> ChatOpenAI:
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(model="scripted-model", base_url=server.base_url, api_key="x", **kwargs)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# --- pure script functions ---------------------------------------------------------------------


def test_parse_script_grammar() -> None:
    text = (
        "Please do the thing.\n"
        '@call search {"q": "a && b"} && @call fetch\n'
        "  @sleep 0.5 @slow 0.1 @say  all {last_tool_result} done  \n"
        "@someone is not a directive\n"
        "@fail 503 overloaded\n"
        "@say"
    )
    assert parse_script(text) == (
        Step(Call((CallSpec("search", '{"q":"a && b"}'), CallSpec("fetch", "{}")))),
        Step(Say("all {last_tool_result} done"), sleep=0.5, slow=0.1),
        Step(Fail(503, "overloaded")),
        Step(Say("")),
    )
    assert parse_script("no directives here") == ()


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("@call", "tool name"),
        ("@call f {bad json}", "invalid JSON"),
        ("@call f [1]", "one JSON object"),
        ("@call f {} && @say x", "expected @call"),
        ("@sleep", "seconds"),
        ("@sleep -1 @say x", "seconds"),
        ("@sleep 0.1", "missing action"),
        ("@slow 0.1 hello", "expected a directive"),
        ("@fail", "HTTP status"),
        ("@fail 200 ok", "HTTP status"),
    ],
)
def test_parse_script_errors(line: str, error: str) -> None:
    with pytest.raises(ScriptError, match=error) as info:
        parse_script(f"intro\n{line}")
    assert "line 2" in str(info.value)


def test_decide_steps_and_placeholders() -> None:
    script = '@call lookup {"id": 7}\n@say got {last_tool_result} under {system} {other}'
    first = decide([{"role": "system", "content": "SYS"}, user(script)])
    assert first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("lookup", {"id": 7})
    assert call.id.startswith("call_0_")
    # Deterministic: the same conversation gives the same reply.
    assert decide([{"role": "system", "content": "SYS"}, user(script)]) == first

    history = [
        {"role": "system", "content": "SYS"},
        user(script),
        {"role": "assistant", "content": None, "tool_calls": [{"id": call.id}]},
        {"role": "tool", "tool_call_id": call.id, "content": [{"type": "text", "text": "42"}]},
    ]
    assert decide(history) == Reply(content="got 42 under SYS {other}")
    history.append({"role": "assistant", "content": "got 42 under SYS {other}"})
    assert decide(history) == Reply(content=DONE_TEXT)
    # A new user turn starts a new script; its tool call ids differ from the first turn's.
    again = decide([*history, user('@call lookup {"id": 7}')])
    assert again.tool_calls[0].id != call.id


def test_decide_plain_reply_and_content_parts() -> None:
    long_text = "x" * 500
    assert decide([user(long_text)]) == Reply(content=PLAIN_PREFIX + "x" * 200)
    assert decide([]) == Reply(content=PLAIN_PREFIX)
    parts = [{"type": "text", "text": "intro"}, {"type": "text", "text": "@sleep 1 @say hi"}]
    assert decide([{"role": "user", "content": parts}]) == Reply(content="hi", sleep=1.0)
    reply = decide([user("@call known && @call mystery {}")])
    tools = [{"type": "function", "function": {"name": "known", "parameters": {}}}]
    assert unknown_tools(reply, tools) == ["mystery"]


# --- through langchain-openai ------------------------------------------------------------------


def test_plain_reply(server: ScriptedModelServer) -> None:
    before = server.requests
    reply = chat(server).invoke("Hello there, agent!")
    assert reply.content == "scripted reply to: Hello there, agent!"
    assert reply.response_metadata["finish_reason"] == "stop"
    assert server.requests == before + 1


def test_tool_call_then_answer_quoting_the_result(server: ScriptedModelServer) -> None:
    model = chat(server)
    script = '@call get_weather {"city": "Paris"}\n@say The weather: {last_tool_result}'
    messages: list[Any] = [SystemMessage("You are terse."), HumanMessage(script)]
    first = model.invoke(messages)
    assert isinstance(first, AIMessage)
    assert first.response_metadata["finish_reason"] == "tool_calls"
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    messages += [first, ToolMessage("sunny, 21°C", tool_call_id=call["id"])]
    second = model.invoke(messages)
    assert second.content == "The weather: sunny, 21°C"
    assert not second.tool_calls
    assert model.invoke([*messages, second]).content == DONE_TEXT


def test_parallel_tool_calls(server: ScriptedModelServer) -> None:
    script = '@call add {"a": 1, "b": 2} && @call add {"a": 3, "b": 4} && @call now'
    reply = chat(server).invoke(script)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
        ("now", {}),
    ]
    assert len({c["id"] for c in reply.tool_calls}) == 3


def test_usage_on_invoke(server: ScriptedModelServer) -> None:
    reply = chat(server).invoke("count my tokens please")
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0
    assert usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_stream_text(server: ScriptedModelServer) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    chunks = list(chat(server).stream(f"@say {text}"))
    assert sum(1 for c in chunks if c.content) >= 5
    assert "".join(str(c.content) for c in chunks) == text
    assert any(c.response_metadata.get("finish_reason") == "stop" for c in chunks)


async def test_astream_tool_calls_with_usage(server: ScriptedModelServer) -> None:
    script = '@call write_file {"path": "/a.txt", "content": "hello world, ' + "x" * 40 + '"}'
    script += ' && @call ls {"path": "/"}'
    aggregate: AIMessageChunk | None = None
    count = 0
    async for chunk in chat(server, stream_usage=True).astream(script):
        count += 1
        aggregate = chunk if aggregate is None else aggregate + chunk
    assert aggregate is not None
    assert count > 5
    assert [(c["name"], c["args"]) for c in aggregate.tool_calls] == [
        ("write_file", {"path": "/a.txt", "content": "hello world, " + "x" * 40}),
        ("ls", {"path": "/"}),
    ]
    assert all(c["id"].startswith("call_0_") for c in aggregate.tool_calls)
    assert aggregate.response_metadata["finish_reason"] == "tool_calls"
    assert aggregate.usage_metadata is not None
    assert aggregate.usage_metadata["output_tokens"] > 0


def test_openai_sdk_stream_include_usage(server: ScriptedModelServer) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:
        stream = client.chat.completions.create(
            model="anything",
            messages=[{"role": "user", "content": "@say one two three"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0
    assert chunks[-2].choices[0].finish_reason == "stop"


def test_fail_surfaces_as_openai_error(server: ScriptedModelServer) -> None:
    before = server.requests
    # max_retries=2: the server says x-should-retry: false, so the error is not retried.
    with pytest.raises(openai.InternalServerError, match="boom") as info:
        chat(server, max_retries=2).invoke("@fail 500 boom")
    assert info.value.status_code == 500
    assert server.requests == before + 1
    with pytest.raises(openai.RateLimitError):
        chat(server).invoke("@fail 429 slow down")


def test_script_error_is_a_bad_request(server: ScriptedModelServer) -> None:
    with pytest.raises(openai.BadRequestError, match="invalid JSON"):
        chat(server).invoke("@call broken {nope}")


async def test_concurrent_conversations(server: ScriptedModelServer) -> None:
    model = chat(server)

    async def converse(i: int) -> None:
        script = f'@sleep 0.05 @call tool_{i} {{"n": {i}}}\n@say answer {i}: {{last_tool_result}}'
        first = await model.ainvoke([HumanMessage(script)])
        (call,) = first.tool_calls
        assert (call["name"], call["args"]) == (f"tool_{i}", {"n": i})
        tool = ToolMessage(f"result {i}", tool_call_id=call["id"])
        final = await model.ainvoke([HumanMessage(script), first, tool])
        assert final.content == f"answer {i}: result {i}"
        plain = await model.ainvoke(f"conversation {i}")
        assert plain.content == f"scripted reply to: conversation {i}"

    started = time.perf_counter()
    await asyncio.gather(*(converse(i) for i in range(20)))
    assert time.perf_counter() - started < 5  # the sleeps overlap


async def test_sleep_is_cancellable(server: ScriptedModelServer) -> None:
    model = chat(server)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model.ainvoke("@sleep 30 @say too late"), 0.2)
    assert (await model.ainvoke("@say still here")).content == "still here"


async def test_slow_stream(server: ScriptedModelServer) -> None:
    started = time.perf_counter()
    pieces = [c.content async for c in chat(server).astream("@slow 0.02 @say a b c d")]
    assert "".join(map(str, pieces)) == "a b c d"
    assert time.perf_counter() - started >= 0.1


def test_http_errors_and_models(server: ScriptedModelServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        bad = client.post(
            "/v1/chat/completions",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert bad.status_code == 400
        assert set(bad.json()["error"]) >= {"message", "type", "code"}
        assert bad.json()["error"]["type"] == "invalid_request_error"
        assert client.post("/chat/completions", json={"messages": "nope"}).status_code == 400
        odd = [user("odd"), {"role": "assistant", "tool_calls": 5}, user("@say fine")]
        assert client.post("/chat/completions", json={"messages": odd}).status_code == 200
        missing = client.get("/v1/nothing")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_url"
        assert client.get("/v1/chat/completions").status_code == 405
        models = client.get("/v1/models").json()
        assert [m["id"] for m in models["data"]] == [server.model]
        body = client.post("/chat/completions", json={"messages": [user("hi")]}).json()
        assert body["object"] == "chat.completion"
        assert body["choices"][0]["message"]["content"] == "scripted reply to: hi"


def test_init_chat_model_from_environment(
    server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain.chat_models import init_chat_model

    for name, value in server.env.items():
        monkeypatch.setenv(name, value)
    model = init_chat_model("openai:scripted-model", max_retries=0)
    assert model.invoke("from env").content == "scripted reply to: from env"


# --- the Anthropic Messages wire, through langchain-anthropic and the anthropic SDK ---------


def claude(server: ScriptedModelServer, **kwargs: Any) -> ChatAnthropic:
    kwargs.setdefault("max_retries", 0)
    return ChatAnthropic(model="scripted", base_url=server.url, api_key="x", **kwargs)


WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_anthropic_tool_use_then_tool_result(server: ScriptedModelServer) -> None:
    model = claude(server).bind_tools([WEATHER_TOOL])
    script = '@call get_weather {"city": "Paris"}\n@say The weather: {last_tool_result}'
    messages: list[Any] = [SystemMessage("You are terse."), HumanMessage(script)]
    first = model.invoke(messages)
    assert isinstance(first, AIMessage)
    assert first.response_metadata["stop_reason"] == "tool_use"
    [block] = first.content
    assert isinstance(block, dict)
    assert (block["type"], block["name"], block["input"]) == (
        "tool_use",
        "get_weather",
        {"city": "Paris"},
    )
    (call,) = first.tool_calls
    assert (call["name"], call["args"], call["id"]) == (
        "get_weather",
        {"city": "Paris"},
        block["id"],
    )
    # The result goes back as a tool_result block of a user message: not a new user turn.
    messages += [first, ToolMessage([{"type": "text", "text": "sunny"}], tool_call_id=call["id"])]
    second = model.invoke(messages)
    assert second.text == "The weather: sunny"
    assert second.response_metadata["stop_reason"] == "end_turn"
    assert model.invoke([*messages, second]).text == DONE_TEXT
    assert claude(server).invoke([SystemMessage("SYS"), HumanMessage("@say {system}")]).text == (
        "SYS"
    )


async def test_anthropic_stream_content_blocks_and_usage(server: ScriptedModelServer) -> None:
    model = claude(server).bind_tools([WEATHER_TOOL])
    text = "The quick brown fox jumps over the lazy dog."
    chunks = [chunk async for chunk in model.astream(f"@say {text}")]
    # With tools bound, langchain-anthropic keeps the content blocks of the stream.
    assert sum(1 for c in chunks if c.content) >= 5
    assert all(isinstance(c.content, list) for c in chunks)
    aggregate = chunks[0]
    for chunk in chunks[1:]:
        aggregate += chunk
    assert aggregate.text == text
    assert aggregate.usage_metadata is not None
    assert aggregate.usage_metadata["input_tokens"] > 0
    assert aggregate.usage_metadata["output_tokens"] > 0
    script = '@call get_weather {"city": "Paris", "note": "' + "x" * 40 + '"} && @call now'
    calls: Any = None
    async for chunk in model.astream(script):
        calls = chunk if calls is None else calls + chunk
    assert [(c["name"], c["args"]) for c in calls.tool_calls] == [
        ("get_weather", {"city": "Paris", "note": "x" * 40}),
        ("now", {}),
    ]
    assert calls.response_metadata["stop_reason"] == "tool_use"


def test_anthropic_sdk_stream_events(server: ScriptedModelServer) -> None:
    with anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0) as client:
        request: Any = {
            "model": "anything",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": '@call f {"a": [1, 2, 3]}'}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        }
        with client.messages.stream(**request) as stream:
            kinds = [event.type for event in stream]
            message = stream.get_final_message()
        tokens = client.messages.count_tokens(
            model="anything", messages=request["messages"], tools=request["tools"]
        )
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "input_json", "content_block_stop"} <= set(kinds)
    [block] = message.content
    assert block.type == "tool_use"
    assert (block.name, block.input) == ("f", {"a": [1, 2, 3]})
    assert message.stop_reason == "tool_use"
    assert tokens.input_tokens > 0


def test_anthropic_errors(server: ScriptedModelServer) -> None:
    before = server.requests
    with pytest.raises(anthropic.InternalServerError, match="boom"):
        claude(server, max_retries=2).invoke("@fail 500 boom")
    assert server.requests == before + 1  # x-should-retry: false
    with pytest.raises(anthropic.RateLimitError):
        claude(server).invoke("@fail 429 slow down")
    with pytest.raises(anthropic.BadRequestError, match="invalid JSON"):
        claude(server).invoke("@call broken {nope}")
    with httpx.Client(base_url=server.url) as client:
        bad = client.post("/v1/messages", json={"messages": [{"role": "robot", "content": "x"}]})
        assert bad.status_code == 400
        assert bad.json() == {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "'messages.0.role' must be 'user' or 'assistant'",
            },
        }
        assert client.post("/v1/messages", json={"messages": "x"}).status_code == 400
        assert client.post("/v1/messages", json=[1]).status_code == 400
        assert client.get("/v1/messages").status_code == 405


def test_anthropic_text_beside_tool_results_is_the_next_turn() -> None:
    chat = AnthropicWire().parse(
        {
            "system": [{"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "@call f\n@say first"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
                        {"type": "text", "text": "@say second {last_tool_result} {system}"},
                    ],
                },
            ],
        }
    )
    assert [m["role"] for m in chat.messages] == ["system", "user", "assistant", "tool", "user"]
    assert decide(chat.messages) == Reply(content="second r SYS")


# --- the Ollama chat wire, through langchain-ollama and the ollama client -------------------


def llama(server: ScriptedModelServer, **kwargs: Any) -> ChatOllama:
    return ChatOllama(model="scripted", base_url=server.url, **kwargs)


def test_ollama_tool_call_then_answer(server: ScriptedModelServer) -> None:
    model = llama(server)
    script = '@call get_weather {"city": "Paris"}\n@say The weather: {last_tool_result}'
    messages: list[Any] = [SystemMessage("You are terse."), HumanMessage(script)]
    first = model.invoke(messages)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    messages += [first, ToolMessage("sunny", tool_call_id=call["id"])]
    second = model.invoke(messages)
    assert second.content == "The weather: sunny"
    assert second.response_metadata["done_reason"] == "stop"
    assert second.usage_metadata is not None
    assert second.usage_metadata["input_tokens"] > 0
    assert model.invoke([*messages, second]).content == DONE_TEXT


async def test_ollama_stream_and_parallel_calls(server: ScriptedModelServer) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    chunks = [c async for c in llama(server).astream(f"@say {text}")]
    assert sum(1 for c in chunks if c.content) >= 5
    assert "".join(str(c.content) for c in chunks) == text
    calls = await llama(server).ainvoke('@call add {"a": 1} && @call now')
    assert [(c["name"], c["args"]) for c in calls.tool_calls] == [("add", {"a": 1}), ("now", {})]
    # Not streamed when the request says so.
    reply = ollama.Client(host=server.url).chat(
        model="x", messages=[{"role": "user", "content": "@say whole"}], stream=False
    )
    assert (reply.message.content, reply.done) == ("whole", True)


def test_ollama_errors(server: ScriptedModelServer) -> None:
    with pytest.raises(ollama.ResponseError, match="slow down") as info:
        llama(server).invoke("@fail 429 slow down")
    assert info.value.status_code == 429
    with httpx.Client(base_url=server.url) as client:
        raw = client.post("/api/chat", json={"messages": [{"role": "user", "content": "@say a b"}]})
        lines = [json.loads(line) for line in raw.text.splitlines()]  # streams by default
        assert raw.headers["content-type"] == "application/x-ndjson"
        assert "".join(line["message"]["content"] for line in lines) == "a b"
        assert [line["done"] for line in lines] == [False, False, True]
        bad = client.post("/api/chat", json={"messages": [{"content": "x"}]})
        assert (bad.status_code, bad.json()) == (
            400,
            {"error": "'messages.0.role' must be a string"},
        )
        missing = client.get("/api/nothing")
        assert (missing.status_code, set(missing.json())) == (404, {"error"})
        assert client.get("/api/tags").json()["models"][0]["name"] == server.model


def test_env_for_each_provider(
    server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain.chat_models import init_chat_model

    for provider in PROVIDERS:
        for name, value in server.env_for(provider).items():
            monkeypatch.setenv(name, value)
        model = init_chat_model(f"{provider}:scripted")
        assert model.invoke(f"@say from {provider}").text == f"from {provider}"
    with pytest.raises(ValueError, match="unknown provider"):
        server.env_for("nobody")


# --- lifecycle ---------------------------------------------------------------------------------


def _post_raw(sock: socket.socket, body: bytes) -> bytes:
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(rest) < length:
        rest += sock.recv(65536)
    return rest


def test_keep_alive_and_clean_stop() -> None:
    body = json.dumps({"messages": [user("@say kept")]}).encode()
    with ScriptedModelServer() as scripted:
        port = scripted.port
        assert scripted.base_url == f"http://127.0.0.1:{port}/v1"
        with socket.create_connection(("127.0.0.1", port)) as sock:
            for _ in range(3):  # three requests on one connection
                reply = json.loads(_post_raw(sock, body))
                assert reply["choices"][0]["message"]["content"] == "kept"
        assert scripted.requests == 3
    assert not scripted.running
    assert not [t for t in threading.enumerate() if t.name == f"scripted-model-{port}"]
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    scripted.stop()  # idempotent


async def test_async_context_manager_and_stop_during_sleep() -> None:
    async with ScriptedModelServer(keep_alive=False) as scripted:
        model = chat(scripted)
        assert (await model.ainvoke("@say async")).content == "async"
        pending = asyncio.create_task(model.ainvoke("@sleep 30 @say woken"))
        await asyncio.sleep(0.2)
        started = time.perf_counter()
    assert time.perf_counter() - started < 3  # stopping wakes up the sleeping answer
    assert (await pending).content == "woken"


@pytest.mark.slow
def test_main_entry_point() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentctl.testing", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        banner = [process.stdout.readline()]
        while banner[-1] and "Ctrl-C" not in banner[-1]:
            banner.append(process.stdout.readline())
        base_url = banner[0].rsplit(" ", 1)[-1].strip()
        assert base_url.startswith("http://127.0.0.1:")
        reply = httpx.post(f"{base_url}/chat/completions", json={"messages": [user("cli")]})
        assert reply.json()["choices"][0]["message"]["content"] == "scripted reply to: cli"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    assert f"OPENAI_BASE_URL={base_url}" in "".join(banner)
    assert "OPENAI_API_KEY=scripted" in "".join(banner)
    assert f"ANTHROPIC_BASE_URL={base_url.removesuffix('/v1')} " in "".join(banner)
    assert f"OLLAMA_HOST={base_url.removesuffix('/v1')} " in "".join(banner)
    assert "Stopped" in out
    assert "Traceback" not in err


def test_say_with_a_json_string_says_it_line_breaks_included() -> None:
    (step,) = parse_script('@slow 0.1 @say "# Title\\n\\n**bold** and \\"quotes\\""')
    assert step.action == Say('# Title\n\n**bold** and "quotes"')
    assert step.slow == 0.1
    # Not a whole JSON string: the text as written.
    assert parse_script('@say "hi" there')[0].action == Say('"hi" there')
    assert parse_script('@say "unclosed')[0].action == Say('"unclosed')
