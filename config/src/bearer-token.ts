import { createHash, timingSafeEqual } from "node:crypto";

// Hashing first gives timingSafeEqual the equal-length inputs it needs, without leaking the length.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/**
 * A shared secret presented as `Authorization: Bearer <token>` (the supervisor's token, the
 * metrics token). Only the header is read: a secret in a URL would end up in logs and histories.
 */
export class BearerToken {
  private readonly expected: Buffer;

  constructor(token: string) {
    this.expected = digest(token);
  }

  /** Whether the header carries exactly `Bearer <token>`, compared in constant time. */
  matches(header: string | undefined): boolean {
    const match = /^Bearer +(\S+) *$/i.exec(header ?? "");
    const presented = digest(match?.[1] ?? "");
    return timingSafeEqual(presented, this.expected) && match !== null;
  }
}
