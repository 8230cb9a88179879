import { type CSSProperties, createElement, useEffect, useRef } from "react";
import {
  type ConnectDetail,
  type CubicleScreenElement,
  type DisconnectDetail,
  defineCubicleScreen,
  type GetCapability,
  type LeaseDetail,
  type StateDetail,
} from "./element.ts";

export interface CubicleScreenProps {
  /**
   * Fetches a fresh capability from your backend; called for every attempt. Null disconnects. The
   * latest function is always the one called, so an inline arrow does not reconnect on each render;
   * to show another screen, give the component a new `key`.
   */
  getCapability: GetCapability | null;
  onStateChange?: (detail: StateDetail) => void;
  onConnect?: (detail: ConnectDetail) => void;
  onDisconnect?: (detail: DisconnectDetail) => void;
  onControlEnded?: () => void;
  onLease?: (detail: LeaseDetail) => void;
  /** The screen's accessible name ("Computer screen" when absent). */
  label?: string;
  className?: string;
  style?: CSSProperties;
}

/** `<cubicle-screen>` for React: the element does the work; this passes props in and events out. */
export function CubicleScreen(props: CubicleScreenProps) {
  const ref = useRef<CubicleScreenElement>(null);
  const latest = useRef(props);
  useEffect(() => {
    latest.current = props;
  });

  useEffect(() => {
    defineCubicleScreen();
    const element = ref.current;
    if (!element) return;
    const handlers: Record<string, (event: Event) => void> = {
      state: (event) => latest.current.onStateChange?.((event as CustomEvent<StateDetail>).detail),
      connect: (event) => latest.current.onConnect?.((event as CustomEvent<ConnectDetail>).detail),
      disconnect: (event) => latest.current.onDisconnect?.((event as CustomEvent<DisconnectDetail>).detail),
      "control-ended": () => latest.current.onControlEnded?.(),
      lease: (event) => latest.current.onLease?.((event as CustomEvent<LeaseDetail>).detail),
    };
    for (const [name, handler] of Object.entries(handlers)) element.addEventListener(name, handler);
    return () => {
      for (const [name, handler] of Object.entries(handlers)) element.removeEventListener(name, handler);
    };
  }, []);

  const wanted = props.getCapability !== null;
  useEffect(() => {
    const element = ref.current;
    if (!element || !wanted) return;
    element.getCapability = (context) => {
      const getCapability = latest.current.getCapability;
      return getCapability ? getCapability(context) : Promise.reject(new Error("no capability source"));
    };
    return () => {
      element.getCapability = null;
    };
  }, [wanted]);

  return createElement("cubicle-screen", {
    ref,
    label: props.label,
    className: props.className,
    style: props.style,
  });
}
