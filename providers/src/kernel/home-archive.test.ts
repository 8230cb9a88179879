import { Readable } from "node:stream";
import { extract, type Header, pack } from "tar-stream";
import { describe, expect, it } from "vitest";
import { ArchiveRefused, archiveMemberName, copyEntry, sanitiseHomeArchive } from "./home-archive.ts";

describe("archiveMemberName", () => {
  it("keeps members relative to the home", () => {
    expect(archiveMemberName("./")).toBeNull();
    expect(archiveMemberName(".")).toBeNull();
    expect(archiveMemberName("./a/b.txt")).toBe("a/b.txt");
    expect(archiveMemberName("a/")).toBe("a");
    expect(archiveMemberName("/abs/x")).toBe("abs/x");
  });

  it("refuses members that climb out", () => {
    expect(() => archiveMemberName("../x")).toThrow(ArchiveRefused);
    expect(() => archiveMemberName("a/../../x")).toThrow(ArchiveRefused);
    expect(() => archiveMemberName("a\0b")).toThrow("a name contains NUL");
  });
});

/** A small archive made with tar-stream: one folder and one file. */
async function archive(): Promise<Buffer> {
  const tar = pack();
  tar.entry({ name: "./notes", type: "directory" });
  tar.entry({ name: "./notes/a.txt", mode: 0o4755, uid: 0, gid: 0 }, "hello\n");
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("sanitiseHomeArchive", () => {
  it("gives every member the computer's owner and drops setuid bits", async () => {
    const out = await drain(sanitiseHomeArchive(Readable.from([await archive()]), { uid: 1000, gid: 1000 }));
    const headers: { name: string; mode?: number; uid?: number }[] = [];
    const reading = extract();
    Readable.from([out]).pipe(reading);
    for await (const entry of reading) {
      headers.push({ name: entry.header.name, mode: entry.header.mode, uid: entry.header.uid });
      entry.resume();
    }
    expect(headers).toEqual([
      { name: "notes", mode: 0o755, uid: 1000 },
      { name: "notes/a.txt", mode: 0o755, uid: 1000 },
    ]);
  });

  it("fails an archive cut short at a block boundary, which tar itself would extract", async () => {
    const whole = await archive();
    const cut = whole.subarray(0, 1024);
    await expect(drain(sanitiseHomeArchive(Readable.from([cut]), { uid: 1000, gid: 1000 }))).rejects.toThrow(
      ArchiveRefused,
    );
  });
});

describe("copyEntry", () => {
  it("fails the copy, not the process, when the entry's body breaks off", async () => {
    const tar = pack();
    const reading = (async () => {
      for await (const _ of tar) {
        // drained, as a response body would be
      }
    })().catch((error: unknown) => error);
    async function* broken() {
      yield Buffer.from("half a file");
      throw new Error("reading the home failed (exit 137)");
    }
    const body = Object.assign(broken(), { resume: () => undefined });
    const header: Header = {
      name: "./big.bin",
      size: 1_000,
      type: "file",
      mode: 0o644,
      mtime: new Date(),
      linkname: "",
      uid: 1000,
      gid: 1000,
      uname: "",
      gname: "",
      devmajor: 0,
      devminor: 0,
      pax: null,
    };
    await expect(copyEntry(tar, header, body)).rejects.toThrow("reading the home failed (exit 137)");
    // the pack is torn down with it; its reader sees the failure
    expect(await reading).toBeInstanceOf(Error);
  });
});
