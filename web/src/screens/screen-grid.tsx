"use client";

import { type ActiveScreen, screenLabel } from "./active-screens.ts";
import { ScreenViewer } from "./screen-viewer.tsx";
import styles from "./screens.module.css";

/** View-only thumbnails of the active screens; each one is a button that picks it for the large viewer. */
export function ScreenGrid({
  workspaceId,
  computerId,
  epoch,
  screens,
  selected,
  onSelect,
}: {
  workspaceId: string;
  computerId: string;
  epoch: string;
  screens: ActiveScreen[];
  selected: number;
  onSelect: (index: number) => void;
}) {
  return (
    <ul className={styles.grid} aria-label="Active screens">
      {screens.map((screen) => {
        const label = screenLabel(screen);
        return (
          <li key={screen.index}>
            <ScreenViewer
              workspaceId={workspaceId}
              computerId={computerId}
              screen={screen.index}
              mode="view"
              label={label}
              testId={`screen-thumb-${screen.index}`}
              epoch={epoch}
            >
              <button
                type="button"
                className={styles.thumbButton}
                aria-pressed={screen.index === selected}
                aria-label={label}
                title={`Show ${label} in the large viewer`}
                onClick={() => onSelect(screen.index)}
              />
            </ScreenViewer>
          </li>
        );
      })}
    </ul>
  );
}
