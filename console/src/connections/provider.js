// Connecting a user-owned MCP server: the provider's sign-in page opens in a new tab (or in
// this one, from the page a consent request's link opens), whose callback
// (`<base>/connections/callback`) stores the user's token — and, for a flow a run waits on,
// resumes that run by itself. Only the flow's own signed-in user gets its provider address.
import { request } from "../api.js";

/** `POST /connections/{server}/authorize`: a new flow for `server`, started without a run
 * (`{flow_id, authorization_url, expires_at}`). */
export function authorize(credentials, server) {
  return request(credentials, `/connections/${encodeURIComponent(server)}/authorize`, { method: "POST" });
}

/** True when the server refused a flow because it expired or was used already. */
export function isExpired(error) {
  return error?.status === 410 || /expired|already used|used already/i.test(error?.message ?? "");
}

/** `GET /connections/flows/{id}`: the signed-in user's flow `flowId` (`{server, description,
 * user, agent, thread_id, expires_at, status}`); another user's is a 404. */
export function flowOf(credentials, flowId) {
  return request(credentials, `/connections/flows/${encodeURIComponent(flowId)}`);
}

/** `POST /connections/flows/{id}/redirect`: the provider's sign-in address for the flow
 * `flowId` of the signed-in user. It also sets the cookie that binds the provider's callback
 * to this browser. Once per flow. */
async function providerUrl(credentials, flowId) {
  const answer = await request(credentials, `/connections/flows/${encodeURIComponent(flowId)}/redirect`, {
    method: "POST",
  });
  const url = answer?.redirect_url;
  if (typeof url !== "string" || !/^https?:\/\//.test(url)) {
    throw new Error("The server answered no provider address to sign in at.");
  }
  return url;
}

/** Send this tab to the provider's sign-in page, for the flow `flowId` — or, given `server`,
 * for a new flow of that server (`authorize`). */
export async function goToSignIn(credentials, { flowId, server }) {
  if (!flowId) flowId = (await authorize(credentials, server)).flow_id;
  window.location.assign(await providerUrl(credentials, flowId));
}

/** Open the provider's sign-in page in a new tab, for the flow `flowId` — or, given `server`,
 * for a new flow of that server (`authorize`). Call it in the click itself: the tab is opened
 * at once (so popup blockers let it through), then sent to the provider once `POST
 * /connections/flows/{id}/redirect` answered (which also sets the cookie that binds the
 * callback to this browser). Returns `{url, blocked}`: `blocked` when no tab could be opened,
 * for the caller to offer `url` as a link. */
export async function openSignIn(credentials, { flowId, server }) {
  const tab = window.open("", "_blank");
  try {
    if (!flowId) flowId = (await authorize(credentials, server)).flow_id;
    const url = await providerUrl(credentials, flowId);
    if (!tab) return { url, blocked: true };
    tab.opener = null; // the provider's page gets no handle on the console
    tab.location.href = url;
    return { url, blocked: false };
  } catch (error) {
    tab?.close();
    throw error;
  }
}
