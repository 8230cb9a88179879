/** What a capability lets its socket do: watch the screen, or (under a control lease) drive it. */
export type ScreenMode = "view" | "control";

export const SCREEN_MODES: readonly ScreenMode[] = ["view", "control"];
