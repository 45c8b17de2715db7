// The Threads view: the caller's threads (#/threads), or one of them (#/threads/<id>).
import { ThreadDetail } from "../threads/ThreadDetail.jsx";
import { ThreadList } from "../threads/ThreadList.jsx";

export function Threads({ id }) {
  return id ? <ThreadDetail key={id} threadId={id} /> : <ThreadList />;
}
