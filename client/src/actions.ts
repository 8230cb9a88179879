// The input actions the api's `act` takes, as its description lists them. The OpenAPI document
// types a batch loosely (its items are checked by the api as a whole), so the client names them.

export type Modifier = "ctrl" | "alt" | "shift" | "super";
export type MouseButton = "left" | "right" | "middle";
export interface Point {
  x: number;
  y: number;
}

export type DesktopAction =
  | ({ type: "click" | "double_click" | "right_click" | "middle_click"; modifiers?: Modifier[] } & Point)
  | ({ type: "move" } & Point)
  | { type: "mouse_down" | "mouse_up"; button: MouseButton; x?: number; y?: number }
  | { type: "drag"; from: Point; to: Point }
  | { type: "type"; text: string }
  | { type: "key"; key: string; modifiers?: Modifier[] }
  | ({ type: "scroll"; dx: number; dy: number } & Point)
  | { type: "wait"; ms: number };
