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

/** An SDK client acting with `credentials` (never an API key from anywhere else). */
export function makeClient(credentials) {
  return new Client({ apiUrl: API_URL, apiKey: null, defaultHeaders: authHeaders(credentials) });
}

/** A request the SDK has no method for (the platform API, /info), as JSON; a failed answer
 * throws an Error whose message is the server's `detail`. */
export async function request(credentials, path, { method = "GET", body } = {}) {
  const response = await fetch(`${API_URL}${path}`, {
    method,
    headers: {
      ...authHeaders(credentials),
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data?.detail ?? response.statusText);
  return data;
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
