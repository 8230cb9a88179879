"use client";

import { type CubicleScreenElement, defineCubicleScreen, serveScreenFrame } from "@cubicle/viewer";
import { createElement, useEffect, useRef } from "react";
import styles from "./embedded-screen.module.css";

/**
 * All the embed page shows: one `<cubicle-screen>` filling the frame. Its capabilities come from the
 * parent page by postMessage, answered only by a parent at one of `parentOrigins`; never from this
 * page's URL.
 */
export function EmbeddedScreen({ parentOrigins }: { parentOrigins: string[] }) {
  const screen = useRef<CubicleScreenElement>(null);
  useEffect(() => {
    defineCubicleScreen();
    if (!screen.current) return;
    return serveScreenFrame(screen.current, { parentOrigins });
  }, [parentOrigins]);
  // by name: React's JSX types know no <cubicle-screen>
  return createElement("cubicle-screen", { ref: screen, className: styles.screen });
}
