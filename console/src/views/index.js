// The console's views, in navigation order: `shown(context)` says whether the visitor's
// navigation lists one (the API still decides what each may see).
import { Chat } from "./Chat.jsx";
import { Memory } from "./Memory.jsx";
import { Operator } from "./Operator.jsx";
import { Threads } from "./Threads.jsx";

const always = () => true;

export const VIEWS = [
  { id: "chat", title: "Chat", shown: always, Component: Chat },
  { id: "threads", title: "Threads", shown: always, Component: Threads },
  { id: "memory", title: "Memory", shown: always, Component: Memory },
  {
    id: "operator",
    title: "Operator",
    shown: ({ caller, info }) =>
      caller === "operator" || (caller === "anonymous" && Boolean(info.credentials?.anonymous)),
    Component: Operator,
  },
];
