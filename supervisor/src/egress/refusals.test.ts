import { describe, expect, it } from "vitest";
import { parseLogLine, RefusalLog, RING_SIZE } from "./refusals.ts";

const TAG = "CE-0123456789abcdef";
const line = (port: number) =>
  `${TAG} IN=cubicle0 OUT=veth1 PHYSIN=veth2 MAC=02:42 SRC=172.18.0.2 DST=10.99.0.10 LEN=60 TOS=0x00 PREC=0x00 TTL=63 ID=1 DF PROTO=TCP SPT=40000 DPT=${port} WINDOW=64240 RES=0x00 SYN URGP=0`;

describe("the refusal log", () => {
  it("reads destination, protocol and port from a LOG line, and no port for ICMP", () => {
    expect(parseLogLine(line(8080))).toEqual({
      tag: TAG,
      refusal: { address: "10.99.0.10", port: 8080, protocol: "tcp" },
    });
    expect(
      parseLogLine(
        `${TAG} IN=cubicle0 OUT=eth0 SRC=172.18.0.2 DST=203.0.113.9 LEN=84 PROTO=ICMP TYPE=8 CODE=0 ID=7 SEQ=1`,
      )?.refusal,
    ).toEqual({ address: "203.0.113.9", port: null, protocol: "icmp" });
    expect(parseLogLine("eth0: link up")).toBeNull();
  });

  it("keeps a bounded ring per computer and answers after a cursor; another run's cursor starts over", () => {
    const log = new RefusalLog((tag) => (tag === TAG ? "home-1" : undefined));
    log.add(line(1));
    log.add(line(2).replace(TAG, "CE-ffffffffffffffff"));
    const first = log.after("home-1", null);
    expect(first.refusals.map((refusal) => refusal.port)).toEqual([1]);
    log.add(line(3));
    const next = log.after("home-1", first.cursor);
    expect(next.refusals.map((refusal) => refusal.port)).toEqual([3]);
    expect(log.after("home-1", next.cursor).refusals).toEqual([]);
    expect(log.after("home-1", "00000000.1").refusals).toHaveLength(2);
    for (let port = 10; port < 10 + RING_SIZE + 5; port++) log.add(line(port));
    const all = log.after("home-1", null).refusals;
    expect(all).toHaveLength(RING_SIZE);
    expect(all.at(-1)?.port).toBe(10 + RING_SIZE + 4);
  });
});
