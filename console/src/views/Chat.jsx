// Chat with the agent on the official `useStream` hook: tokens as they stream, tool calls and
// subagent delegations (expandable), the files the agent wrote, errors, approval gates and
// requests to connect an account. The thread is kept in the address (#/chat/<thread id>) so
// a reload comes back to it.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { ChatThreads } from "../chat/ChatThreads.jsx";
import { Connect, isConnectionRequest } from "../chat/Connect.jsx";
import { Files } from "../chat/Files.jsx";
import { Gate, isApprovalRequest } from "../chat/Gate.jsx";
import { Messages } from "../chat/Messages.jsx";
import { Shortcuts, useShortcuts } from "../chat/Shortcuts.jsx";
import { textOf } from "../chat/text.js";
import { useNewRun } from "../chat/useNewRun.js";
import { useConsole } from "../context.js";
import { navigate } from "../route.js";

/** Submit options of every run: subagents stream their own messages too. */
const RUN = { streamSubgraphs: true };

/** The resume value answering `interrupt` with `answer`: the answer alone when it is the
 * only interrupt waiting, else keyed by its id. */
function resumeValue(interrupts, interrupt, answer) {
  return interrupts.length > 1 && interrupt.id ? { [interrupt.id]: answer } : answer;
}

/** A run in these states can still be joined to stream what it sends. */
const UNFINISHED = new Set(["pending", "running"]);

function Composer({ stream, onSend, onStop }) {
  const [draft, setDraft] = useState("");
  const send = (event) => {
    event.preventDefault();
    if (!draft.trim() || stream.isLoading) return;
    onSend();
    stream.submit({ messages: [{ type: "human", content: draft }] }, RUN);
    setDraft("");
  };
  return (
    <form className="composer" onSubmit={send}>
      <label htmlFor="prompt" className="visually-hidden">
        Message
      </label>
      <textarea
        id="prompt"
        rows={2}
        value={draft}
        placeholder="Message the agent"
        aria-keyshortcuts="/"
        onChange={(event) => setDraft(event.target.value)}
        onKeyDown={(event) => {
          // Not while an input method composes a word: its Enter picks the word.
          if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) send(event);
        }}
      />
      <button type="submit" disabled={stream.isLoading}>
        Send
      </button>
      {stream.isLoading ? (
        <button type="button" className="danger" onClick={onStop} aria-keyshortcuts="Escape" title="Stop (Esc)">
          Stop
        </button>
      ) : null}
    </form>
  );
}

/** What failed, in words: a run of this page, loading the thread (an HTTP answer), or the
 * thread's last run (its error, kept in the thread). */
function failureOf(error, runError) {
  if (error === runError) return "The run failed";
  if (error.status ?? error.response?.status) return "Loading the thread failed";
  return "The last run failed";
}

/** The status line (announced once per outcome, never per token): the agent works, was
 * stopped, failed, waits (`waiting` says for what), or has answered. */
function useStatus(stream, waiting, stopped, failure) {
  // A run of this page has ended: known in the same render as the end, so the line never
  // reads "idle" for a moment between "working" and "answered".
  const sawLoading = useRef(false);
  if (stream.isLoading) sawLoading.current = true;
  const answered = sawLoading.current;
  if (stream.isLoading) return ["working", "The agent is working…"];
  if (stopped) return ["stopped", "You stopped the agent: its answer is incomplete."];
  if (failure) return ["failed", `${failure}.`];
  if (waiting) return ["waiting", waiting];
  const last = answered ? stream.messages.findLast((message) => message.type === "ai" && textOf(message)) : null;
  if (!last) return ["idle", ""];
  return [
    "answered",
    <>
      The agent answered.<span className="visually-hidden"> {textOf(last)}</span>
    </>,
  ];
}

/** Follows the page's end as content grows (`signature` changes), unless the reader has
 * scrolled up: then `away` is true (a "Jump to latest" shows) until they are back. */
function useFollow(signature) {
  const pinned = useRef(true);
  const [away, setAway] = useState(false);
  useEffect(() => {
    const onScroll = () => {
      const root = document.documentElement;
      pinned.current = window.innerHeight + window.scrollY >= root.scrollHeight - 48;
      setAway(!pinned.current);
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  useLayoutEffect(() => {
    if (pinned.current) window.scrollTo(0, document.documentElement.scrollHeight);
  }, [signature]);
  const jump = () => {
    pinned.current = true;
    setAway(false);
    window.scrollTo(0, document.documentElement.scrollHeight);
  };
  return [away, jump];
}

/** The AI messages of the run under way that have text: what Stop keeps. */
function partialAnswer(messages) {
  const asked = messages.findLastIndex((message) => message.type === "human");
  const afterId = asked >= 0 ? (messages[asked].id ?? null) : null;
  return messages
    .slice(asked + 1)
    .filter((message) => message.type === "ai" && textOf(message))
    .map((message) => ({ afterId, message }));
}

/** What the run waits for, as the status line says it: `[label for tool calls, status]`. */
function waitingFor(gates, connections) {
  if (gates.length) return ["approval", "Waiting for your decision."];
  if (connections.length) {
    const servers = connections.map((interrupt) => interrupt.value.server).join(", ");
    return ["a connection", `Waiting for you to connect ${servers}.`];
  }
  return [null, ""];
}

/** One mount of the thread's stream. `join`: a run started elsewhere to stream once the
 * thread is loaded; `onNewRun(run)`: such a run appeared while a connection was pending. */
function Conversation({ id, join, onNewRun, onCreated, onChanged, newChat, focusPrompt }) {
  const { info, client } = useConsole();
  const runError = useRef(null);
  const stream = useStream({
    client,
    assistantId: info.assistant_id ?? info.graph,
    threadId: id,
    onThreadId: (threadId) => {
      onCreated(threadId);
      navigate("chat", threadId, { replace: true });
    },
    reconnectOnMount: true,
    filterSubagentMessages: true,
    onError: (error) => {
      runError.current = error;
    },
  });
  const interrupts = stream.isLoading ? [] : stream.interrupts;
  const gates = interrupts.filter(isApprovalRequest);
  const connections = interrupts.filter(isConnectionRequest);
  const [toolsWait, waiting] = waitingFor(gates, connections);
  // Stop keeps what the agent had written (the server keeps no unfinished message).
  const [stopped, setStopped] = useState(false);
  const [kept, setKept] = useState([]);
  const stop = () => {
    if (!stream.isLoading) return;
    setKept((before) => [...before, ...partialAnswer(stream.messages)]);
    setStopped(true);
    stream.stop();
  };
  const failure = stream.error && !stopped ? failureOf(stream.error, runError.current) : null;
  const [outcome, status] = useStatus(stream, waiting, stopped, failure);
  const last = stream.messages.at(-1);
  const [away, jump] = useFollow(
    `${stream.messages.length}:${last ? textOf(last).length : 0}:${kept.length}:${interrupts.length}:${outcome}`,
  );
  useShortcuts({ onNewChat: newChat, onStop: stop });
  useEffect(() => {
    if (!focusPrompt.current) return;
    focusPrompt.current = false;
    document.getElementById("prompt")?.focus();
  }, [focusPrompt]);
  // The chats' list shows a new thread and an answered one's new order.
  const wasLoading = useRef(false);
  useEffect(() => {
    if (wasLoading.current && !stream.isLoading) onChanged();
    wasLoading.current = stream.isLoading;
  }, [stream.isLoading, onChanged]);
  const resume = (interrupt, answer) =>
    stream.submit(null, {
      ...RUN,
      command: { resume: resumeValue(stream.interrupts, interrupt, answer) },
    });

  // The provider's callback resumes the run in a new one: follow it here.
  useNewRun(client, id, connections.length > 0, onNewRun);
  // A run already under way when the thread is opened (the callback resumed it before this
  // page loaded it, or another client's): followed too, once the thread is loaded.
  const looked = useRef(null);
  useEffect(() => {
    if (!id || join?.thread_id === id || looked.current === id || stream.isThreadLoading) return;
    looked.current = id;
    if (stream.isLoading) return; // this page's own run
    client.runs.list(id, { limit: 1 }).then(
      ([run]) => run && UNFINISHED.has(run.status) && looked.current === id && onNewRun(run),
      () => {}, // the thread shows what it holds: a run that ends is shown on the next visit
    );
  }, [client, id, join, stream.isThreadLoading, stream.isLoading, onNewRun]);
  const joined = useRef(false);
  useEffect(() => {
    if (!join || join.thread_id !== id || joined.current) return;
    if (stream.isThreadLoading || stream.isLoading) return;
    joined.current = true;
    if (UNFINISHED.has(join.status)) stream.joinStream(join.run_id);
  }, [join, id, stream.isThreadLoading, stream.isLoading]);

  return (
    <div className="chat-layout">
      <section className="chat" aria-labelledby="chat-title">
        <h1 id="chat-title" className="visually-hidden" tabIndex={-1}>
          Chat
        </h1>
        <Messages stream={stream} waiting={toolsWait} kept={kept} />
        {gates.map((interrupt, index) => (
          <Gate
            key={interrupt.id ?? index}
            interrupt={interrupt}
            busy={stream.isLoading}
            onResume={(gate, decisions) => resume(gate, { decisions })}
          />
        ))}
        {connections.map((interrupt, index) => (
          <Connect
            key={interrupt.id ?? interrupt.value.flow_id ?? index}
            interrupt={interrupt}
            busy={stream.isLoading}
            onConnected={(request) => resume(request, { connected: true })}
          />
        ))}
        {failure ? (
          <Alert className="run-error">
            {failure}: {describeError(stream.error)}
          </Alert>
        ) : null}
        <div className="composer-bar">
          {away ? (
            <button type="button" className="secondary jump" onClick={jump}>
              Jump to latest <span aria-hidden="true">↓</span>
            </button>
          ) : null}
          <Composer
            stream={stream}
            onStop={stop}
            onSend={() => {
              setStopped(false);
              jump();
            }}
          />
          <div className="status-line">
            <p
              className="status"
              role="status"
              data-testid="status"
              data-outcome={outcome}
              data-loading={String(stream.isLoading)}
            >
              {status}
            </p>
            <Shortcuts />
          </div>
        </div>
      </section>
      <Files files={stream.values?.files} />
    </div>
  );
}

export function Chat({ id }) {
  // A run started elsewhere (the callback of a connection) mounts the stream anew: it reads
  // the thread's state from the server, then streams that run.
  const [followed, setFollowed] = useState({ mount: 0, run: null });
  const follow = useCallback((run) => setFollowed(({ mount }) => ({ mount: mount + 1, run })), []);
  // Another thread (or New chat) is a new conversation; the thread a new chat just created
  // is the same one.
  const created = useRef(null);
  const focusPrompt = useRef(false);
  const [session, setSession] = useState({ id, count: 0 });
  if (session.id !== id) setSession({ id, count: id && id === created.current ? session.count : session.count + 1 });
  const [version, setVersion] = useState(0);
  const changed = useCallback(() => setVersion((count) => count + 1), []);
  const onCreated = useCallback((threadId) => {
    created.current = threadId;
    setVersion((count) => count + 1);
  }, []);
  const newChat = useCallback(() => {
    focusPrompt.current = true; // the new conversation's composer takes the focus
    if (id) navigate("chat");
    else setSession(({ count }) => ({ id: null, count: count + 1 }));
  }, [id]);
  return (
    <div className="chat-page">
      <ChatThreads current={id} version={version} onNewChat={newChat} />
      <Conversation
        key={`${session.count}.${followed.mount}`}
        id={id}
        join={followed.run}
        onNewRun={follow}
        onCreated={onCreated}
        onChanged={changed}
        newChat={newChat}
        focusPrompt={focusPrompt}
      />
    </div>
  );
}
