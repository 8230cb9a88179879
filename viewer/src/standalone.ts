// The entry of dist/cubicle-screen.js: one file for a page without a bundler, which registers
// <cubicle-screen> as it loads.
import { defineCubicleScreen } from "./element.ts";

defineCubicleScreen();

export { CubicleScreenElement } from "./element.ts";
export { connectScreenFrame } from "./frame.ts";
