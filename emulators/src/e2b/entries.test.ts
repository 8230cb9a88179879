import { describe, expect, it } from "vitest";
import { parseEntries } from "./entries.ts";

/** What `find -printf FIND_FORMAT` prints for one entry. */
const printed = (...fields: string[]) => `${fields.join("\0")}\0`;

describe("envd's EntryInfo from find", () => {
  it("reads files, folders and links as envd reports them (Go's mode strings, RFC 3339 with nanoseconds)", () => {
    const output = Buffer.from(
      printed("f", "644", "7", "user", "user", "1700000000.1234567890", "", "/home/user/a b\nc.txt") +
        printed("d", "1777", "4096", "root", "root", "1700000000.5", "", "/tmp") +
        printed("l", "777", "11", "user", "user", "1700000000", "/etc/hosts", "/home/user/link") +
        printed("d", "4755", "4096", "root", "root", "0.0", "", "/"),
    );
    expect(parseEntries(output)).toEqual([
      {
        name: "a b\nc.txt",
        type: "FILE_TYPE_FILE",
        path: "/home/user/a b\nc.txt",
        size: "7",
        mode: 0o644,
        permissions: "-rw-r--r--",
        owner: "user",
        group: "user",
        modifiedTime: "2023-11-14T22:13:20.123456789Z",
      },
      expect.objectContaining({
        name: "tmp",
        type: "FILE_TYPE_DIRECTORY",
        mode: 0o777,
        permissions: "dtrwxrwxrwx",
      }),
      expect.objectContaining({
        type: "FILE_TYPE_SYMLINK",
        permissions: "Lrwxrwxrwx",
        symlinkTarget: "/etc/hosts",
        modifiedTime: "2023-11-14T22:13:20.000000000Z",
      }),
      expect.objectContaining({ name: "/", permissions: "durwxr-xr-x" }),
    ]);
  });
});
