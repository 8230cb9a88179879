// The part of noVNC's RFB client the dashboard uses (the package ships no types).
declare module "@novnc/novnc" {
  export interface RfbOptions {
    wsProtocols?: string[];
  }
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, url: string, options?: RfbOptions);
    viewOnly: boolean;
    scaleViewport: boolean;
    background: string;
    disconnect(): void;
    focus(): void;
    /** Sends text to the server's clipboard (ClientCutText); the server's comes as a "clipboard" event. */
    clipboardPasteFrom(text: string): void;
    blur(): void;
  }
}
