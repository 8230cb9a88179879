import { randomBytes, randomInt } from "node:crypto";

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A sandbox id shaped like E2B's: 20 lowercase letters and digits. */
export function newSandboxId(): string {
  let id = "";
  for (let i = 0; i < 20; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** An unguessable token (envd access, traffic access, API key). */
export function newToken(): string {
  return randomBytes(24).toString("base64url");
}
