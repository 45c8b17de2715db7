// Signing in through the agent's OpenID Connect provider ([auth] client_id): the
// authorization code flow with PKCE (S256), as a browser app without a secret does it. The
// provider sends the browser back to this page (/ui/) with a code, which is exchanged for
// the access token the API takes as `Authorization: Bearer`.
const PENDING_KEY = "agentctl:oidc-pending";

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

function randomText() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

function redirectUri() {
  return `${window.location.origin}${window.location.pathname}`;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** `address` (an endpoint the discovery document names) when it is https — or http on
 * loopback, for a provider whose issuer itself is http on loopback (a local test provider). */
function safeEndpoint(issuer, address) {
  const endpoint = new URL(address);
  if (endpoint.protocol === "https:") return endpoint.href;
  const home = new URL(issuer);
  const local = (url) => url.protocol === "http:" && LOOPBACK.has(url.hostname);
  if (local(home) && local(endpoint)) return endpoint.href;
  throw new Error(`the provider's endpoint ${endpoint.origin} is not https: refused`);
}

/** The provider's endpoint named `name` in its discovery document. */
async function discover(issuer, name) {
  const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`the provider's discovery document: ${response.status}`);
  const config = await response.json();
  if (!config[name]) throw new Error(`the provider's discovery document names no ${name}`);
  return safeEndpoint(issuer, config[name]);
}

/** Leave for the provider's sign-in page; the browser comes back to `finishSignIn`. */
export async function startSignIn({ issuer, client_id: clientId }) {
  const endpoint = await discover(issuer, "authorization_endpoint");
  const verifier = randomText();
  const state = randomText();
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  sessionStorage.setItem(
    PENDING_KEY,
    JSON.stringify({ verifier, state, hash: window.location.hash }),
  );
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri(),
    scope: "openid",
    state,
    code_challenge: base64url(digest),
    code_challenge_method: "S256",
  });
  window.location.assign(`${endpoint}?${query}`);
}

/** When the provider sent the browser back here: the access token for the code (the
 * address is cleaned up, the view the visitor left restored); null when it did not. Throws
 * an Error saying what went wrong. */
export async function finishSignIn({ issuer, client_id: clientId }) {
  const query = new URLSearchParams(window.location.search);
  if (!query.has("code") && !query.has("error")) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  const hash = pending?.hash || window.location.hash;
  window.history.replaceState(null, "", `${window.location.pathname}${hash}`);
  window.dispatchEvent(new HashChangeEvent("hashchange")); // the view the visitor left
  // The state first: what an answer not started here says (its error too) is not shown.
  if (!pending || pending.state !== query.get("state")) {
    throw new Error("the sign-in answer does not belong to a sign-in started here: sign in again");
  }
  if (query.has("error")) {
    throw new Error(`the provider refused the sign-in: ${query.get("error_description") || query.get("error")}`);
  }
  const endpoint = await discover(issuer, "token_endpoint");
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: query.get("code"),
      redirect_uri: redirectUri(),
      client_id: clientId,
      code_verifier: pending.verifier,
    }),
  });
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok || !tokens.access_token) {
    throw new Error(`the provider did not give a token: ${tokens.error || response.status}`);
  }
  return tokens.access_token;
}
