import { posix } from "node:path";
import type { Machines } from "../machines/index.ts";
import { ConnectError } from "./connect.ts";

/** The user envd acts for when the request names none: the desktop template's user. */
export const DEFAULT_USER = "user";

export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** The users of one sandbox, looked up in its /etc/passwd once each. */
export class SandboxUsers {
  private readonly known = new Map<string, Promise<SandboxUser | null>>();

  constructor(
    private readonly machines: Machines,
    private readonly containerId: string,
  ) {}

  /** The user named `name`; an unknown name is `unauthenticated`, as envd answers it. */
  async get(name: string): Promise<SandboxUser> {
    let lookup = this.known.get(name);
    if (!lookup) {
      lookup = this.lookUp(name);
      this.known.set(name, lookup);
      // a failed look-up (the container was paused meanwhile) is asked again next time
      lookup.catch(() => this.known.delete(name));
    }
    const user = await lookup;
    if (!user) throw new ConnectError("unauthenticated", `invalid username: '${name}'`);
    return user;
  }

  private async lookUp(name: string): Promise<SandboxUser | null> {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name)) return null;
    const result = await this.machines.run(this.containerId, {
      argv: ["getent", "passwd", name],
      user: "root",
      cwd: "/",
    });
    const fields = result.stdout.toString("utf8").trim().split(":");
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    const home = fields[5];
    if (result.code !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid) || !home) return null;
    return { name, uid, gid, home };
  }
}

/**
 * A path as envd resolves it for a user: `~` and `~/…` are in their home, a relative path is under
 * their home, an absolute one is taken as it is, and no path at all is the home itself.
 */
export function resolvePath(path: string, user: SandboxUser): string {
  if (path.includes("\0")) throw new ConnectError("invalid_argument", "the path contains a NUL byte");
  let expanded = path;
  if (path.startsWith("~")) {
    if (path.length > 1 && path[1] !== "/") {
      throw new ConnectError("invalid_argument", `cannot expand user-specific home dir in '${path}'`);
    }
    expanded = posix.join(user.home, path.slice(1));
  }
  return posix.isAbsolute(expanded) ? expanded : posix.join(user.home, expanded);
}

/** The user named by `Authorization: Basic base64("<user>:")`, else the default user. */
export function userFromAuthorization(header: string | undefined): string {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? "");
  if (!match?.[1]) return DEFAULT_USER;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const name = decoded.slice(0, decoded.indexOf(":") === -1 ? undefined : decoded.indexOf(":"));
  return name || DEFAULT_USER;
}
