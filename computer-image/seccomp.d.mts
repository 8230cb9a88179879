/** The `HostConfig.SecurityOpt` entry applying seccomp/chromium.json (the profile's JSON itself). */
export const CHROMIUM_SECCOMP: string;
