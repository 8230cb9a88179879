// noVNC ships no types; novnc.ts describes the part the viewer uses. This file is in the viewer's
// own program only, so that a consumer's fuller declaration of the module (web/) does not clash.
declare module "@novnc/novnc";
