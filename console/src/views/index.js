// The console's views, in navigation order: `shown(context)` says whether the visitor's
// navigation lists one (the API still decides what each may see); a view `linked` only is
// opened from a link (its address), never listed.
import { Chat } from "./Chat.jsx";
import { ConnectRequest } from "./ConnectRequest.jsx";
import { Connections } from "./Connections.jsx";
import { Memory } from "./Memory.jsx";
import { Operator } from "./Operator.jsx";
import { Threads } from "./Threads.jsx";
import { Usage } from "./Usage.jsx";

const always = () => true;

export const VIEWS = [
  { id: "chat", title: "Chat", shown: always, Component: Chat },
  { id: "threads", title: "Threads", shown: always, Component: Threads },
  { id: "memory", title: "Memory", shown: always, Component: Memory },
  // A user's own connections, or the operator's counts: anonymous visitors have neither.
  {
    id: "connections",
    title: "Connections",
    shown: ({ caller, info }) => caller !== "anonymous" || Boolean(info.credentials?.anonymous),
    Component: Connections,
  },
  // A user's own usage and budgets, or everyone's for the operator.
  {
    id: "usage",
    title: "Usage",
    shown: ({ caller, info }) => caller !== "anonymous" || Boolean(info.credentials?.anonymous),
    Component: Usage,
  },
  {
    id: "operator",
    title: "Operator",
    shown: ({ caller, info }) =>
      caller === "operator" || (caller === "anonymous" && Boolean(info.credentials?.anonymous)),
    Component: Operator,
  },
  // A consent request's link: `#/connect/<flow id>`.
  { id: "connect", title: "Connect an account", shown: always, linked: true, Component: ConnectRequest },
];
