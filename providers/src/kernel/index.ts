// What backends are built from: the rules every backend applies the same way (home paths, action
// batches, control passwords), failure injection points, and helpers for machines driven by
// shell commands (quoting, the xdotool mapping, a child's output as a stream).
export * from "./actions.ts";
export * from "./by-name.ts";
export * from "./child-output.ts";
export * from "./control-password.ts";
export * from "./egress.ts";
export * from "./faults.ts";
export * from "./home-archive.ts";
export * from "./home-listing.ts";
export * from "./home-path.ts";
export * from "./home-scripts.ts";
export * from "./launch.ts";
export * from "./shell-quote.ts";
export * from "./xdotool.ts";
