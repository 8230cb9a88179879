import { CONTROL_PASSWORD } from "@cubicle/providers/contract";
import { describe, expect, it } from "vitest";
import { controlPasswords } from "./control-password.ts";

const SECRET = "screen-capability-key-0123456789abcdefg";

describe("control passwords", () => {
  it("are 8 letters or digits, the same for the same lease and secret", () => {
    const password = controlPasswords(SECRET)("lease-1");
    expect(password).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(password).toMatch(CONTROL_PASSWORD);
    expect(controlPasswords(SECRET)("lease-1")).toBe(password);
  });

  it("differ between leases and between secrets", () => {
    const of = controlPasswords(SECRET);
    const passwords = new Set(Array.from({ length: 200 }, (_, i) => of(`lease-${i}`)));
    expect(passwords.size).toBe(200);
    expect(controlPasswords(`${SECRET}x`)("lease-1")).not.toBe(of("lease-1"));
  });
});
