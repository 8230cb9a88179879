import type { DesktopAction, MouseButton, Observation } from "../../src/contract/index.ts";
import { encodePng, Raster } from "./png.ts";

export const SCREEN_WIDTH = 1280;
export const SCREEN_HEIGHT = 800;
export const ACTIVE_WINDOW = "Fake Desktop";

type Colour = readonly [number, number, number];

const CELL_W = 8;
const CELL_H = 12;
const COLUMNS = SCREEN_WIDTH / CELL_W;
const TEXT_ROWS = 56;
const TEXT_CELLS = COLUMNS * TEXT_ROWS;
const KEY_ROW_Y = 700;
const KEY_CELLS = COLUMNS;
const SCROLL_ROW_Y = 730;
const BUTTONS_ROW_Y = 760;
const REVISION_ROW_Y = 790;

/** A stable colour per code: a cheap multiplicative hash, never too dark to see. */
const colourOf = (code: number): Colour => [
  64 + ((code * 37) % 192),
  64 + ((code * 91 + 17) % 192),
  64 + ((code * 53 + 101) % 192),
];

const hashText = (text: string) => {
  let hash = 7;
  for (const ch of text) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) % 1_000_003;
  return hash;
};

const clampX = (x: number) => Math.min(SCREEN_WIDTH - 1, Math.max(0, x));
const clampY = (y: number) => Math.min(SCREEN_HEIGHT - 1, Math.max(0, y));

/**
 * One virtual screen. The picture is a pure function of this state, and every action except
 * `wait` bumps `revision` (drawn as a bit row), so any change shows up in the PNG.
 */
export class FakeScreen {
  private readonly background: Colour;
  /** Typed characters wrap around the text area, so only the last TEXT_CELLS are kept. */
  private text: number[] = [];
  private typed = 0;
  private keys: number[] = [];
  private cursor = { x: SCREEN_WIDTH / 2, y: SCREEN_HEIGHT / 2 };
  private lastClick: { x: number; y: number; code: number } | null = null;
  private scroll = { dx: 0, dy: 0 };
  private held = new Set<MouseButton>();
  private revision = 0;

  constructor(readonly index: number) {
    this.background = [24 + index * 12, 32 + index * 8, 48 + index * 4];
  }

  /** Applies one (already validated) action; `wait` is the caller's, as it takes real time. */
  apply(action: DesktopAction): void {
    switch (action.type) {
      case "click":
      case "double_click":
      case "right_click":
      case "middle_click":
        this.moveTo(action.x, action.y);
        this.lastClick = {
          x: this.cursor.x,
          y: this.cursor.y,
          code: hashText(`${action.type}:${(action.modifiers ?? []).join("+")}`),
        };
        break;
      case "move":
        this.moveTo(action.x, action.y);
        break;
      case "mouse_down":
      case "mouse_up":
        if (action.x !== undefined && action.y !== undefined) this.moveTo(action.x, action.y);
        if (action.type === "mouse_down") this.held.add(action.button);
        else this.held.delete(action.button);
        break;
      case "drag":
        this.moveTo(action.to.x, action.to.y);
        break;
      case "type":
        for (const ch of action.text) this.typeChar(ch.codePointAt(0) ?? 0);
        break;
      case "key":
        this.keys.push(hashText(`${(action.modifiers ?? []).join("+")}:${action.key}`));
        if (this.keys.length > KEY_CELLS) this.keys.shift();
        break;
      case "scroll":
        this.moveTo(action.x, action.y);
        this.scroll = { dx: this.scroll.dx + action.dx, dy: this.scroll.dy + action.dy };
        break;
      case "wait":
        return;
    }
    this.revision++;
  }

  observe(): Observation {
    return {
      png: this.render(),
      width: SCREEN_WIDTH,
      height: SCREEN_HEIGHT,
      cursor: { ...this.cursor },
      activeWindow: ACTIVE_WINDOW,
    };
  }

  private moveTo(x: number, y: number): void {
    this.cursor = { x: clampX(x), y: clampY(y) };
  }

  private typeChar(code: number): void {
    this.text[this.typed % TEXT_CELLS] = code;
    this.typed++;
  }

  private render(): Uint8Array {
    const raster = new Raster(SCREEN_WIDTH, SCREEN_HEIGHT, this.background);
    this.text.forEach((code, cell) => {
      raster.fill(
        (cell % COLUMNS) * CELL_W + 1,
        Math.floor(cell / COLUMNS) * CELL_H + 1,
        6,
        10,
        colourOf(code),
      );
    });
    this.keys.forEach((code, cell) => {
      raster.fill(cell * CELL_W + 1, KEY_ROW_Y, 6, 20, colourOf(code));
    });
    // Scrolling is drawn as two bars growing left or right of the middle by the total scrolled.
    const scrollColour: Colour = [200, 200, 80];
    const bar = (y: number, length: number) =>
      raster.fill(SCREEN_WIDTH / 2 + Math.min(0, length * 4), y, Math.abs(length * 4), 8, scrollColour);
    bar(SCROLL_ROW_Y, this.scroll.dx);
    bar(SCROLL_ROW_Y + 10, this.scroll.dy);
    (["left", "middle", "right"] as const).forEach((button, i) => {
      if (this.held.has(button)) raster.fill(i * 24, BUTTONS_ROW_Y, 20, 20, [240, 80, 80]);
    });
    for (let bit = 0; bit < 32; bit++) {
      const on = (this.revision >>> bit) & 1;
      raster.fill(bit * 40, REVISION_ROW_Y, 40, 10, on ? [255, 255, 255] : [0, 0, 0]);
    }
    if (this.lastClick) {
      const colour = colourOf(this.lastClick.code);
      raster.fill(this.lastClick.x - 8, this.lastClick.y - 1, 17, 3, colour);
      raster.fill(this.lastClick.x - 1, this.lastClick.y - 8, 3, 17, colour);
    }
    raster.fill(this.cursor.x, this.cursor.y, 10, 14, [250, 250, 250]);
    raster.fill(this.cursor.x + 2, this.cursor.y + 2, 6, 10, [10, 10, 10]);
    return encodePng(raster);
  }
}
