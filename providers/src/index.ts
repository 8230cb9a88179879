// Which backend computers use, and building it. The contract itself is `@cubicle/providers/contract`.
export * from "./selection/selection.ts";
