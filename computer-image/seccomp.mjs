// The seccomp profile every container that runs the computer image's Chromium is made with (the
// supervisor's computers and the vendor emulators' desktops): Docker's default for a container
// without capabilities, plus what Chromium's own sandbox needs (seccomp/README.md).
import { readFileSync } from "node:fs";

const profile = JSON.parse(readFileSync(new URL("./seccomp/chromium.json", import.meta.url), "utf8"));

/**
 * The `HostConfig.SecurityOpt` entry applying the profile, read once when first imported. Docker's
 * API takes the profile's JSON itself (only the CLI reads a file); compact, so the container spec's
 * hash follows the rules and not the file's layout.
 */
export const CHROMIUM_SECCOMP = `seccomp=${JSON.stringify(profile)}`;
