"use client";

import { useId, useState } from "react";
import styles from "./screens.module.css";

/**
 * The proxy closes a socket whose message is over its frame limit (256 KiB by default); a paste is
 * kept well under it, so a long one is refused here with a reason instead of dropping the screen.
 */
const MAX_PASTE_BYTES = 64 * 1024;

type Note = { kind: "ok" | "error"; text: string } | null;

/**
 * The clipboard of a screen under one's control (only control sockets carry it; the proxy and the
 * view servers keep it from viewers): text pasted here becomes the computer's clipboard, and the
 * latest text copied or selected in the computer shows here, with a button to copy it out.
 */
export function ScreenClipboard({
  copied,
  paste,
}: {
  /** The last text the computer put on its clipboard, while controlling; null before any. */
  copied: string | null;
  /** Sends text to the computer's clipboard; false when the screen is not connected. */
  paste: (text: string) => boolean;
}) {
  const id = useId();
  const [text, setText] = useState("");
  const [note, setNote] = useState<Note>(null);

  const send = () => {
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > MAX_PASTE_BYTES) {
      setNote({
        kind: "error",
        text: `That is ${Math.ceil(bytes / 1024)} KiB; the computer takes at most ${MAX_PASTE_BYTES / 1024} KiB at a time.`,
      });
    } else if (!paste(text)) {
      setNote({
        kind: "error",
        text: "The screen is not connected; wait for it to reconnect and send again.",
      });
    } else {
      setNote({ kind: "ok", text: "Sent: it is the computer's clipboard now (paste it there as usual)." });
    }
  };

  const copyOut = async () => {
    if (copied === null) return;
    try {
      // Missing outside a secure context (plain http on another host): then the text is there to select.
      if (!navigator.clipboard) throw new Error("no clipboard");
      await navigator.clipboard.writeText(copied);
      setNote({ kind: "ok", text: "Copied to your clipboard." });
    } catch {
      setNote({
        kind: "error",
        text: "The browser did not allow copying: select the text and copy it yourself.",
      });
    }
  };

  return (
    <section className={styles.clipboard} aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Clipboard</h4>
      <div className="field">
        <label htmlFor={`${id}-paste`}>Paste into the computer</label>
        <textarea
          id={`${id}-paste`}
          rows={2}
          value={text}
          onChange={(event) => setText(event.target.value)}
        />
        <div className="row">
          <button type="button" disabled={text === ""} onClick={send}>
            Send to the computer
          </button>
        </div>
      </div>
      <div className="field">
        <label htmlFor={`${id}-copied`}>Copied in the computer</label>
        <textarea
          id={`${id}-copied`}
          rows={2}
          readOnly
          value={copied ?? ""}
          placeholder="Nothing copied there yet"
          onFocus={(event) => event.target.select()}
        />
        <div className="row">
          <button type="button" disabled={copied === null} onClick={copyOut}>
            Copy
          </button>
        </div>
      </div>
      <span role="status" className={note?.kind === "error" ? "notice error" : "hint"}>
        {note?.text}
      </span>
    </section>
  );
}
