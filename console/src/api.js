// The console's one way to reach the server: the official SDK client, on this page's own
// server (the console is served at <base>/ui/, the API at <base>/), with the credentials the
// visitor gave (kept in sessionStorage: they last as long as the tab, reloads included).
import { Client } from "@langchain/langgraph-sdk";

const CREDENTIALS_KEY = "agentctl:credentials";

/** The API's base URL: the folder above /ui/, so the console works behind a path prefix. */
export const API_URL = new URL("..", window.location.href).href.replace(/\/$/, "");

/** `{kind: "token" | "key", value}` as given at sign-in, or null. */
export function loadCredentials() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(CREDENTIALS_KEY) || "null");
    return saved && (saved.kind === "token" || saved.kind === "key") && saved.value ? saved : null;
  } catch {
    return null;
  }
}

export function saveCredentials(credentials) {
  if (credentials) sessionStorage.setItem(CREDENTIALS_KEY, JSON.stringify(credentials));
  else sessionStorage.removeItem(CREDENTIALS_KEY);
}

/** The headers that carry `credentials`: a user's bearer token or the deployment key. */
export function authHeaders(credentials) {
  if (credentials?.kind === "token") return { Authorization: `Bearer ${credentials.value}` };
  if (credentials?.kind === "key") return { "x-api-key": credentials.value };
  return {};
}

let sessionEnded = () => {};

/** `handler(credentials)` runs when the server refuses a user's token (401): it expired or
 * was revoked. The console's frame registers the one handler. */
export function onSessionEnded(handler) {
  sessionEnded = handler;
}

function watch(credentials, response) {
  if (response.status === 401 && credentials?.kind === "token") sessionEnded(credentials);
  return response;
}

/** An SDK client acting with `credentials` (never an API key from anywhere else). */
export function makeClient(credentials) {
  return new Client({
    apiUrl: API_URL,
    apiKey: null,
    defaultHeaders: authHeaders(credentials),
    callerOptions: { fetch: async (...args) => watch(credentials, await fetch(...args)) },
  });
}

/** The server's `detail` in an error answer's body, or null when the body is not the API's
 * JSON (a proxy's HTML page, say). */
function detailOf(body) {
  try {
    return JSON.parse(body)?.detail ?? null;
  } catch {
    return null;
  }
}

/** A request the SDK has no method for (the platform API, /info, /metrics), as JSON (or as
 * text with `text: true`), to this console's server (or to `base`); a failed answer throws an ApiError whose message is the server's
 * `detail`, else the answer's status text. */
export async function request(
  credentials,
  path,
  { method = "GET", body, text: asText = false, base = API_URL } = {},
) {
  const response = watch(
    credentials,
    await fetch(`${base}${path}`, {
      method,
      headers: {
        ...authHeaders(credentials),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  const text = await response.text();
  if (!response.ok) {
    const detail = detailOf(text) ?? (response.statusText || `HTTP ${response.status}`);
    throw new ApiError(response.status, detail);
  }
  if (asText) return text;
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, `${path} did not answer JSON`);
  }
}

/** Check `credentials` with one request they need to be good for (on the platform's root,
 * its overview); throws when refused. */
export async function checkCredentials(credentials, info) {
  if (info?.platform) await request(credentials, "/platform/overview?deploys=1");
  else await makeClient(credentials).threads.search({ limit: 1 });
}

export class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === "string" ? detail : JSON.stringify(detail));
    this.status = status;
  }
}

/** What an SDK or fetch failure says, for a person: the server's detail, not a stack. */
export function describeError(error) {
  if (!error) return "";
  const status = error.status ?? error.response?.status;
  const message = error.message || String(error);
  if (status === 401) return `Not signed in, or the credentials were refused (401): ${message}`;
  if (status === 403) return `Not allowed (403): ${message}`;
  return status ? `${message} (${status})` : message;
}
