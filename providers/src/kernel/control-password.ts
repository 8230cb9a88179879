import { CONTROL_PASSWORD, ProviderError } from "../contract/index.ts";

/** Refuses a control password VNC cannot carry (more than 8 characters would silently be cut). */
export function checkControlPassword(password: string): string {
  if (typeof password !== "string" || !CONTROL_PASSWORD.test(password)) {
    throw new ProviderError(
      "INVALID_PASSWORD",
      "a control password is 1 to 8 printable ASCII characters (VNC's limit)",
    );
  }
  return password;
}
