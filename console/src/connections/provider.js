// Connecting a user-owned MCP server: the provider's sign-in page opens in a new tab, whose
// callback (`<base>/connections/callback`) stores the user's token — and, for a flow a run
// waits on, resumes that run by itself.
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
    const answer = await request(credentials, `/connections/flows/${encodeURIComponent(flowId)}/redirect`, {
      method: "POST",
    });
    const url = answer?.redirect_url;
    if (typeof url !== "string" || !/^https?:\/\//.test(url)) {
      throw new Error("The server answered no provider address to sign in at.");
    }
    if (!tab) return { url, blocked: true };
    tab.opener = null; // the provider's page gets no handle on the console
    tab.location.href = url;
    return { url, blocked: false };
  } catch (error) {
    tab?.close();
    throw error;
  }
}
