import { formatClock } from "./playback.ts";
import type { RecordingInput } from "./queries.ts";
import styles from "./recordings.module.css";

const BUTTONS: Record<Extract<RecordingInput, { type: "click" }>["button"], string> = {
  left: "Left click",
  middle: "Middle click",
  right: "Right click",
};

/** One input in words: text as typed, keys as key caps, pointer actions with where on the screen. */
function InputWhat({ input }: { input: RecordingInput }) {
  switch (input.type) {
    case "text":
      return (
        <>
          Typed <q className={styles.typed}>{input.text}</q>
        </>
      );
    case "key":
      return (
        <>
          Key{" "}
          {input.key.split("+").map((part, index) => (
            // a combination shows as caps joined by "+": Ctrl + C
            // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one combination never reorder
            <span key={index}>
              {index > 0 ? " + " : null}
              <kbd className={styles.key}>{part}</kbd>
            </span>
          ))}
        </>
      );
    case "click":
      return (
        <>
          {BUTTONS[input.button]} at {input.x}, {input.y}
        </>
      );
    case "scroll":
      return (
        <>
          Scroll {input.direction} at {input.x}, {input.y}
        </>
      );
    case "paste":
      return (
        <>
          Pasted {input.length} {input.length === 1 ? "character" : "characters"}{" "}
          <span className="muted">(the text is not kept)</span>
        </>
      );
  }
}

/**
 * What the person did during a take-over, in order, beside the player. Each row is a button that
 * brings the player to that moment; the last one at or before the player's position is marked.
 */
export function InputList({
  inputs,
  position,
  onSeek,
}: {
  inputs: readonly RecordingInput[];
  position: number;
  onSeek: (at: number) => void;
}) {
  let current = -1;
  for (const [index, input] of inputs.entries()) if (input.at <= position) current = index;
  return (
    <ol className="plain-list" aria-label="What the person typed and clicked">
      {inputs.map((input, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the list is fixed for a recording; two inputs can share a time
        <li key={index}>
          <button
            type="button"
            className={styles.input}
            aria-current={index === current ? "true" : undefined}
            onClick={() => onSeek(input.at)}
          >
            <span className={styles.inputTime}>{formatClock(input.at)}</span>
            <span>
              <InputWhat input={input} />
            </span>
          </button>
        </li>
      ))}
    </ol>
  );
}
