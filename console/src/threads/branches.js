// A thread's checkpoints as a tree (each names its parent): the branch shown (the path from
// its newest checkpoint back to the first), the forks on it and their branches, and which
// steps are the agent's own (model, tools, subagents, approvals, edits) rather than its
// middleware's. The same derivation as useStream's branch helpers (parent_checkpoint links),
// kept as plain data the timeline renders.
import { changesOf } from "./summary.js";

const idOf = (entry) => entry?.checkpoint?.checkpoint_id ?? null;
const parentIdOf = (entry) => entry?.parent_checkpoint?.checkpoint_id ?? null;

/** The tree of `history` (newest first, as the server lists it): entries by id and the
 * children of each id (newest first). */
export function treeOf(history) {
  const byId = new Map();
  const children = new Map();
  for (const entry of history) {
    const id = idOf(entry);
    if (id) byId.set(id, entry);
  }
  for (const entry of history) {
    const parent = parentIdOf(entry);
    if (!parent) continue;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(entry);
  }
  return { byId, children, newest: history[0] ?? null };
}

/** The newest checkpoint at or under `entry` (checkpoint ids grow with time): the head of
 * the newest branch through it. */
export function newestUnder(tree, entry) {
  let best = entry;
  const queue = [entry];
  while (queue.length) {
    const current = queue.shift();
    if (idOf(current) > idOf(best)) best = current;
    queue.push(...(tree.children.get(idOf(current)) ?? []));
  }
  return best;
}

/** The branch ending at `headId` (the newest checkpoint when null or unknown): its entries
 * newest first, back to the oldest one the history holds. */
export function pathTo(tree, headId) {
  const path = [];
  let entry = (headId && tree.byId.get(headId)) || tree.newest;
  const seen = new Set();
  while (entry && !seen.has(idOf(entry))) {
    seen.add(idOf(entry));
    path.push(entry);
    entry = tree.byId.get(parentIdOf(entry));
  }
  return path;
}

/** The forks on a branch: for each checkpoint of `path` with more than one child, its
 * children oldest first (branch 1 is the first run from there), the one `path` goes on with,
 * and the head each child's newest branch leads to. */
export function forksOn(tree, path) {
  const forks = new Map(); // fork point id → {branches, chosen}
  for (let index = 1; index < path.length; index += 1) {
    const point = path[index];
    const kids = tree.children.get(idOf(point)) ?? [];
    if (kids.length < 2) continue;
    const branches = [...kids].reverse().map((child) => ({
      id: idOf(child),
      head: idOf(newestUnder(tree, child)),
    }));
    const chosen = branches.findIndex((branch) => branch.id === idOf(path[index - 1]));
    forks.set(idOf(point), { branches, chosen });
  }
  return forks;
}

/** The node that wrote `entry`: what its parent had next; "input" for a run's input, "edit"
 * for a state update made outside a run. */
export function writerOf(tree, entry) {
  const source = entry.metadata?.source;
  if (source === "update") return "edit";
  if (source === "input" || source === "fork") return source;
  const parent = tree.byId.get(parentIdOf(entry));
  const writes = Object.keys(entry.metadata?.writes || {});
  if (writes.length) return writes.join(", ");
  return parent?.next?.length ? parent.next.join(", ") : null;
}

const SUBAGENT_TOOLS = new Set(["task"]);

/** `entry` with what it is: its writer, what it changed since its parent, its kind (input,
 * model, tools, subagent, approval, edit — the agent's — or middleware) and its interrupts. */
export function describe(tree, entry) {
  const writer = writerOf(tree, entry);
  const parent = tree.byId.get(parentIdOf(entry));
  const { added, changed } = changesOf(entry.values, parent ? parent.values : null);
  const interrupts = [
    ...(entry.interrupts ?? []),
    ...(entry.tasks ?? []).flatMap((task) => task.interrupts ?? []),
  ];
  const names = (writer ?? "").split(", ");
  let kind = "middleware";
  if (interrupts.length) kind = "approval";
  else if (writer === "edit") kind = "edit";
  else if (writer === "__start__") kind = "input";
  else if (names.includes("tools")) {
    const delegated = added.some((message) => message.type === "tool" && SUBAGENT_TOOLS.has(message.name));
    kind = delegated ? "subagent" : "tools";
  } else if (names.includes("model")) kind = "model";
  else if (writer && !writer.includes(".") && !writer.startsWith("__") && writer !== "input" && writer !== "fork") {
    kind = "node"; // a node of a graph of one's own
  } else if (added.length && parent) kind = "messages"; // middleware that changed the conversation
  return { entry, id: idOf(entry), writer, added, changed, interrupts, kind };
}

/** Kinds the timeline shows unless asked for every step. */
export const AGENT_KINDS = new Set(["input", "model", "tools", "subagent", "approval", "edit", "node", "messages"]);

/** The checkpoint to run from to send `message` again in place of the one `step` added:
 * the one before it (a run's input at a checkpoint starts a branch there). */
export function forkPointOf(step) {
  return parentIdOf(step.entry);
}
