import { createHmac, hkdfSync } from "node:crypto";

// Letters and digits only: within VNC's printable-ASCII rule, and nothing a shell would expand.
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// The largest multiple of the alphabet's size below 256: bytes above it are skipped, so every
// character is equally likely.
const UNBIASED_LIMIT = 256 - (256 % ALPHABET.length);
const VNC_PASSWORD_LENGTH = 8;

/**
 * The VNC password of a control lease's server, derived rather than stored: minting again for the
 * same lease (on any api replica) reaches the same running server without restarting it, and a
 * new lease gets a password that its predecessor's holder cannot know. Derived from the
 * capability key with its own HKDF purpose, so it reveals nothing about the token keys.
 */
export function controlPasswords(secret: string): (leaseId: string) => string {
  const key = Buffer.from(hkdfSync("sha256", secret, "cubicle", "cubicle/control-vnc-password/v1", 32));
  return (leaseId) => {
    let password = "";
    for (let block = 0; password.length < VNC_PASSWORD_LENGTH; block++) {
      const bytes = createHmac("sha256", key).update(`${block}:${leaseId}`).digest();
      for (const byte of bytes) {
        if (byte < UNBIASED_LIMIT && password.length < VNC_PASSWORD_LENGTH)
          password += ALPHABET[byte % ALPHABET.length];
      }
    }
    return password;
  };
}
