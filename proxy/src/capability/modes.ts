/**
 * What a capability lets its socket do: watch the screen, drive it (under a control lease), or
 * record it (the api's own session recorder: the proxy is the viewer and the socket gets nothing).
 */
export type ScreenMode = "view" | "control" | "record";

/** The modes a person or an API key may ask api for; `record` is minted by api alone. */
export const SCREEN_MODES = ["view", "control"] as const satisfies readonly ScreenMode[];

/** Every mode a capability may carry. */
export const CAPABILITY_MODES: readonly ScreenMode[] = [...SCREEN_MODES, "record"];
