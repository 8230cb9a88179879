import type { Computer } from "@/computers/queries.ts";

export interface ActiveScreen {
  index: number;
  /** The bot whose session holds the screen, or null when it is free. */
  botName: string | null;
}

/**
 * The screens worth showing of a running computer: screen 0 (always there while it runs), every screen
 * a bot holds, and every screen a person controls, in index order.
 */
export function activeScreens(computer: Computer): ActiveScreen[] {
  const indexes = new Set<number>([0]);
  for (const screen of computer.screens) indexes.add(screen.index);
  for (const lease of computer.control) indexes.add(lease.index);
  return [...indexes]
    .sort((a, b) => a - b)
    .map((index) => ({
      index,
      botName: computer.screens.find((screen) => screen.index === index)?.bot.name ?? null,
    }));
}

/** "Screen 2 — research-bot", or "Screen 0 — free". */
export const screenLabel = (screen: ActiveScreen) => `Screen ${screen.index} — ${screen.botName ?? "free"}`;
