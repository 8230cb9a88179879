import type { Sandbox } from "@e2b/desktop";
import type { ScreenTarget } from "../contract/index.ts";
import type { SandboxLayout } from "../remote/machine.ts";
import type { E2bConnection } from "./sandboxes.ts";

/** E2B's desktop template: user `user`; the SDK's display :0 is screen 0, the rest follow it. */
export const E2B_LAYOUT: SandboxLayout = {
  userHome: "/home/user",
  user: { uid: 1000, gid: 1000 },
  displayBase: 0,
  webPortBase: 6080,
  vncPortBase: 5900,
};

/**
 * How the screen proxy reaches one of the sandbox's ports: E2B's own host for it
 * (`<port>-<sandbox id>.<domain>`), or, when the SDK is given one address for sandboxes
 * (E2B_SANDBOX_URL), that address with the sandbox and port named in E2B's routing headers, the
 * way the SDK itself reaches envd there. The traffic token travels as a header. All of it is
 * sealed into the capability; no browser sees it.
 */
export function portTarget(
  connection: E2bConnection,
  sandbox: Sandbox,
  port: number,
  password: string,
): ScreenTarget {
  const headers: Record<string, string> = {};
  if (sandbox.trafficAccessToken) headers["e2b-traffic-access-token"] = sandbox.trafficAccessToken;
  if (connection.sandboxUrl) {
    const base = new URL(connection.sandboxUrl);
    base.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    base.pathname = "/websockify";
    headers["E2b-Sandbox-Id"] = sandbox.sandboxId;
    headers["E2b-Sandbox-Port"] = String(port);
    return { kind: "vendor-websocket", url: base.toString(), password, headers };
  }
  return { kind: "vendor-websocket", url: `wss://${sandbox.getHost(port)}/websockify`, password, headers };
}
