import { describe, expect, it } from "vitest";
import { parseScreens, vncPassword } from "./screens.ts";

const PS = `tini -- /opt/cubicle/start
/bin/sh /opt/cubicle/start
Xvfb :1 -screen 0 1280x800x24 -nolisten tcp
x11vnc -display :1 -rfbport 6080 -viewonly -nosel -shared -forever -rfbauth /run/cubicle/screens/0/view.passwd -quiet
Xvfb :3 -screen 0 1280x800x24 -nolisten tcp
x11vnc -display :3 -rfbport 6084 -viewonly -nosel -shared -forever -rfbauth /run/cubicle/screens/2/view.passwd -quiet
x11vnc -display :3 -rfbport 6085 -shared -forever -rfbauth /run/cubicle/screens/2/control.passwd -quiet
sh -c echo x11vnc -rfbport 6082
`;

describe("parseScreens", () => {
  it("reads running screens, their view and control servers from ps", () => {
    const ports: Record<number, number> = { 6080: 32000, 6084: 32004, 6085: 32005 };
    expect(parseScreens(PS, (port) => ports[port] ?? null)).toEqual([
      { index: 0, display: ":1", viewPort: 32000, control: false, controlPort: null },
      { index: 2, display: ":3", viewPort: 32004, control: true, controlPort: 32005 },
    ]);
  });

  it("lists a screen whose display runs while its view server restarts", () => {
    expect(parseScreens("Xvfb :2 -screen 0 1280x800x24\n", () => 1)).toEqual([
      { index: 1, display: ":2", viewPort: null, control: false, controlPort: null },
    ]);
  });
});

describe("vncPassword", () => {
  it("makes 8 unambiguous characters, different each time", () => {
    const a = vncPassword();
    expect(a).toMatch(/^[a-zA-Z2-9]{8}$/);
    expect(a).not.toMatch(/[01lIoO]/);
    expect(vncPassword()).not.toBe(a);
  });
});
