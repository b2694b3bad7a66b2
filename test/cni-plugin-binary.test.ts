/**
 * The chained CNI plugin's host binary alone (native/cni-plugin/multus-ipmgr-cni.c, docs/cni-plugin.md):
 * VERSION, each error it makes itself, the wire protocol against a stand-in for the bridge's socket (byte
 * for byte), the bridge unreachable with and without failOpen, and its JSON scanner against JSON.parse.
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CNI_PLUGIN,
  type CniAnswer,
  type CniRequest,
  cniPluginUnavailableReason,
  FakeCniBridge,
  runPlugin,
} from "./helpers/cni-plugin.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const unavailable = cniPluginUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/cni-plugin-binary.test.ts is skipped\n`);

const VERSION_ANSWER = '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}\n';

const PREV_RESULT = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "net1", mac: "02:00:00:00:01:01", sandbox: "/var/run/netns/pod-a" }],
  ips: [{ address: "198.51.100.70/25", gateway: "198.51.100.1", interface: 0 }],
};

let dir = "";
let closedSocket = "";
beforeAll(() => {
  dir = makeTempDir("ipmgr-cni-");
  // Nothing listens there: connect fails with ENOENT.
  closedSocket = join(dir, "nobody.sock");
});
afterAll(() => removeTempDir(dir));

const bridges: FakeCniBridge[] = [];
afterEach(async () => {
  await Promise.all(bridges.splice(0).map((b) => b.close()));
});

async function fakeBridge(answer: (r: CniRequest) => CniAnswer | Promise<CniAnswer>) {
  const bridge = await FakeCniBridge.listen(join(dir, `bridge-${bridges.length}.sock`), answer);
  bridges.push(bridge);
  return bridge;
}

function netconf(fields: Record<string, unknown>): string {
  return JSON.stringify({ cniVersion: "1.0.0", name: "net1", type: "multus-ipmgr", ...fields });
}

const env = (command: string, extra: Record<string, string> = {}): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: "c0ffee",
  CNI_NETNS: "/var/run/netns/pod-a",
  CNI_IFNAME: "net1",
  CNI_ARGS: "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-a;K8S_POD_UID=u-1",
  CNI_PATH: "/opt/cni/bin",
  ...extra,
});

const run = (e: Record<string, string>, stdin: string | Buffer) => runPlugin(CNI_PLUGIN, e, stdin);

/** The plugin's own error result, parsed, with its exit code. */
async function errorOf(e: Record<string, string>, stdin: string | Buffer) {
  const r = await run(e, stdin);
  expect(r.code).toBe(1);
  return JSON.parse(r.stdout) as { cniVersion: string; code: number; msg: string; details: string };
}

describe.skipIf(unavailable !== undefined)("the CNI plugin's host binary", () => {
  describe("VERSION, answered by the binary itself", () => {
    it("prints the versions it supports, with the runtime's netconf on stdin or none", async () => {
      for (const stdin of ['{"cniVersion":"0.4.0"}', "", netconf({ socket: closedSocket })]) {
        const r = await run({ CNI_COMMAND: "VERSION" }, stdin);
        expect(r).toEqual({ code: 0, stdout: VERSION_ANSWER, stderr: "" });
      }
    });

    it("refuses a stdin that is not JSON (code 6)", async () => {
      expect(await errorOf({ CNI_COMMAND: "VERSION" }, "{cniVersion: 1.0.0}")).toEqual({
        cniVersion: "1.0.0",
        code: 6,
        msg: "Failed to decode content",
        details: "stdin is not valid JSON (or nested deeper than 256 levels)",
      });
    });
  });

  describe("errors it makes itself, in the netconf's cniVersion", () => {
    it("CNI_COMMAND missing: code 4", async () => {
      expect(await errorOf({}, netconf({ cniVersion: "0.4.0" }))).toEqual({
        cniVersion: "0.4.0",
        code: 4,
        msg: "Invalid environment variables",
        details: "CNI_COMMAND is not set: the runtime sets it to ADD, DEL, CHECK or VERSION",
      });
    });

    it("CNI_COMMAND unknown (GC, a CNI 1.1 command): code 4", async () => {
      const e = await errorOf(env("GC"), netconf({}));
      expect([e.code, e.details]).toEqual([
        4,
        'CNI_COMMAND is "GC": this plugin knows ADD, DEL, CHECK and VERSION',
      ]);
    });

    it("a CNI_ variable holding a newline, which the wire protocol cannot carry: code 4, nothing sent", async () => {
      const bridge = await fakeBridge(() => ({ code: 0, body: "" }));
      const e = await errorOf(
        env("ADD", { CNI_ARGS: "K8S_POD_NAME=a\nb" }),
        netconf({ socket: bridge.path }),
      );
      expect([e.code, e.details]).toEqual([4, "CNI_ARGS holds a newline: the runtime's values never do"]);
      expect(bridge.requests).toEqual([]);
    });

    it("stdin over 1 MiB: code 6", async () => {
      const big = netconf({ socket: closedSocket, padding: "x".repeat(1024 * 1024) });
      const e = await errorOf(env("ADD"), big);
      expect([e.code, e.details]).toEqual([
        6,
        "stdin is longer than 1048576 bytes, the most this plugin reads",
      ]);
    });

    it.each([
      ["not JSON", '{"cniVersion":"1.0.0",}', "stdin is not valid JSON (or nested deeper than 256 levels)"],
      ["empty", "", "stdin is empty: the runtime passes the network configuration as a JSON object"],
      [
        "JSON, not an object",
        "[1,2]",
        "stdin is JSON, but not an object: the network configuration is a JSON object",
      ],
      ["text after the object", "{} {}", "stdin is not valid JSON: text after the object"],
      [
        "nested deeper than 256 levels",
        `{"a":${"[".repeat(300)}${"]".repeat(300)}}`,
        "stdin is not valid JSON (or nested deeper than 256 levels)",
      ],
    ])("stdin %s: code 6", async (_name, stdin, details) => {
      expect(await errorOf(env("ADD"), stdin)).toEqual({
        cniVersion: "1.0.0",
        code: 6,
        msg: "Failed to decode content",
        details,
      });
    });

    it.each([
      [
        "socket not a string",
        { socket: 7 },
        "socket is 7: a string, the path of the bridge's unix socket (default /run/multus-ipmgr/cni/cni.sock)",
      ],
      ["socket empty", { socket: "" }, "socket is empty: leave it out for /run/multus-ipmgr/cni/cni.sock"],
      [
        "socket too long",
        { socket: `/${"s".repeat(107)}` },
        `socket is longer than 107 bytes, the most a unix socket's path holds: "/${"s".repeat(62)}...`,
      ],
      [
        "socket holding a NUL",
        { socket: "/run/a\u0000b" },
        'socket "/run/a\\u0000b" holds a NUL character: a path cannot',
      ],
      ["failOpen not a boolean", { failOpen: "yes" }, 'failOpen is "yes": true or false (default false)'],
      [
        "deadlineSeconds 0",
        { deadlineSeconds: 0 },
        "deadlineSeconds is 0: a whole number of seconds from 1 to 110 (default 30)",
      ],
      [
        "deadlineSeconds 111",
        { deadlineSeconds: 111 },
        "deadlineSeconds is 111: a whole number of seconds from 1 to 110 (default 30)",
      ],
      [
        "deadlineSeconds 2.5",
        { deadlineSeconds: 2.5 },
        "deadlineSeconds is 2.5: a whole number of seconds from 1 to 110 (default 30)",
      ],
      [
        "deadlineSeconds a string",
        { deadlineSeconds: "30" },
        'deadlineSeconds is "30": a whole number of seconds from 1 to 110 (default 30)',
      ],
    ])("%s: code 7 naming the key, the value and what it takes", async (_name, fields, details) => {
      expect(await errorOf(env("ADD"), netconf({ cniVersion: "0.4.0", ...fields }))).toEqual({
        cniVersion: "0.4.0",
        code: 7,
        msg: "Invalid network config",
        details,
      });
    });

    it("cniVersion not a string: code 7, in cniVersion 1.0.0", async () => {
      expect(await errorOf(env("ADD"), netconf({ cniVersion: 1 }))).toEqual({
        cniVersion: "1.0.0",
        code: 7,
        msg: "Invalid network config",
        details: 'cniVersion is 1: a string, such as "1.0.0"',
      });
    });

    it("DEL with a netconf value it cannot read exits 0 with a warning: a runtime would retry DEL forever", async () => {
      const r = await run(env("DEL"), netconf({ deadlineSeconds: 0 }));
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        "multus-ipmgr: warning: DEL: deadlineSeconds is 0: a whole number of seconds from 1 to 110 (default 30); " +
          "the bridge releases the address from its view of the cluster\n",
      );
    });
  });

  describe("the wire protocol, against a stand-in for the bridge", () => {
    it("sends the protocol line, the six env lines and stdin byte for byte; relays the answer's body and code", async () => {
      const body = JSON.stringify(PREV_RESULT);
      const bridge = await fakeBridge(() => ({ code: 0, body }));
      // Whitespace, escapes and non-ASCII kept as sent: the bridge reads the very bytes the runtime wrote.
      const stdin = `{ "cniVersion" : "1.0.0",\n\t"name":"net1", "type":"multus-ipmgr", "socket":${JSON.stringify(bridge.path)},\n "note":"caf\u00e9 \\u00e9 \\"q\\"", "prevResult": ${JSON.stringify(PREV_RESULT, null, 2)} }\n`;
      const r = await run(env("ADD"), stdin);
      expect(r).toEqual({ code: 0, stdout: body, stderr: "" });
      expect(bridge.requests).toHaveLength(1);
      const expected = Buffer.concat([
        Buffer.from(
          "MULTUS-IPMGR-CNI 1\nCNI_COMMAND=ADD\nCNI_CONTAINERID=c0ffee\nCNI_NETNS=/var/run/netns/pod-a\nCNI_IFNAME=net1\n" +
            "CNI_ARGS=IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-a;K8S_POD_UID=u-1\nCNI_PATH=/opt/cni/bin\n\n",
        ),
        Buffer.from(stdin),
      ]);
      expect(bridge.requests[0]?.raw.equals(expected)).toBe(true);
    });

    it("an unset variable is its line with an empty value", async () => {
      const bridge = await fakeBridge(() => ({ code: 0, body: "" }));
      const r = await run(
        { CNI_COMMAND: "DEL", CNI_CONTAINERID: "c0ffee", CNI_IFNAME: "net1" },
        netconf({ socket: bridge.path }),
      );
      expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
      expect(bridge.requests[0]?.headerLines).toEqual([
        "MULTUS-IPMGR-CNI 1",
        "CNI_COMMAND=DEL",
        "CNI_CONTAINERID=c0ffee",
        "CNI_NETNS=",
        "CNI_IFNAME=net1",
        "CNI_ARGS=",
        "CNI_PATH=",
      ]);
    });

    it("relays the bridge's error result and exit code as they are", async () => {
      const body = '{"cniVersion":"1.0.0","code":11,"msg":"Try again later","details":"EC2 ..."}';
      const bridge = await fakeBridge(() => ({ code: 1, body }));
      expect(await run(env("CHECK"), netconf({ socket: bridge.path, failOpen: true }))).toEqual({
        code: 1,
        stdout: body,
        stderr: "",
      });
    });
  });

  describe("the bridge unreachable", () => {
    const details = (socket: string, cause: string) =>
      `the bridge at ${socket} is unreachable (${cause}): is the multus-ipmgr bridge running on this node, with ` +
      "IPMGR_BRIDGE_CNI_SOCKET set to this path? (failOpen: true in the NAD starts the pod without it)";

    it("ADD without failOpen: code 11 naming the socket and the cause", async () => {
      expect(await errorOf(env("ADD"), netconf({ socket: closedSocket, prevResult: PREV_RESULT }))).toEqual({
        cniVersion: "1.0.0",
        code: 11,
        msg: "Try again later",
        details: details(closedSocket, "connect: No such file or directory"),
      });
    });

    it("ADD with failOpen: prevResult verbatim on stdout, exit 0, a warning on stderr", async () => {
      const prev = JSON.stringify(PREV_RESULT, null, 1);
      const stdin = `{"cniVersion":"1.0.0","name":"net1","type":"multus-ipmgr","failOpen":true,"socket":${JSON.stringify(closedSocket)},"prevResult":${prev}}`;
      const r = await run(env("ADD"), stdin);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(prev);
      expect(r.stderr).toBe(
        `multus-ipmgr: warning: ADD: the bridge at ${closedSocket} is unreachable (connect: No such file or directory); ` +
          "failOpen: the pod starts before EC2 routes its address, and the bridge catches up from the API\n",
      );
    });

    it("ADD with failOpen and no prevResult: code 7, nothing to pass on", async () => {
      const e = await errorOf(env("ADD"), netconf({ socket: closedSocket, failOpen: true }));
      expect([e.code, e.details]).toEqual([
        7,
        "there is no prevResult to pass on: chain multus-ipmgr after the plugin that makes the interface (ipvlan)",
      ]);
    });

    it.each([false, true])("DEL (failOpen %s): exit 0, no output", async (failOpen) => {
      const r = await run(env("DEL"), netconf({ socket: closedSocket, failOpen, prevResult: PREV_RESULT }));
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(r.stderr).toContain(`DEL: the bridge at ${closedSocket} is unreachable`);
    });

    it("CHECK without failOpen: code 11; with failOpen: exit 0, no output", async () => {
      const e = await errorOf(env("CHECK"), netconf({ socket: closedSocket, prevResult: PREV_RESULT }));
      expect([e.code, e.details]).toEqual([11, details(closedSocket, "connect: No such file or directory")]);
      const r = await run(
        env("CHECK"),
        netconf({ socket: closedSocket, failOpen: true, prevResult: PREV_RESULT }),
      );
      expect([r.code, r.stdout]).toEqual([0, ""]);
    });

    it("a connection closed before the answer is unreachable too (a bridge restarting mid-ADD)", async () => {
      const bridge = await fakeBridge(() => "close");
      const e = await errorOf(env("ADD"), netconf({ socket: bridge.path, prevResult: PREV_RESULT }));
      expect([e.code, e.details]).toEqual([
        11,
        details(bridge.path, "the connection closed before an answer"),
      ]);
      const prev = JSON.stringify(PREV_RESULT);
      const r = await run(
        env("ADD"),
        netconf({ socket: bridge.path, failOpen: true, prevResult: PREV_RESULT }),
      );
      expect([r.code, r.stdout]).toEqual([0, prev]);
      expect(bridge.requests).toHaveLength(2);
    });

    it("an answer whose first line is not an exit code is no answer", async () => {
      const garbled = await fakeBridge(() => ({ code: Number.NaN, body: "{}" }));
      const e = await errorOf(env("ADD"), netconf({ socket: garbled.path }));
      expect([e.code, e.details]).toEqual([
        11,
        details(garbled.path, "the answer's first line is not an exit code: NaN"),
      ]);
    });

    it("no answer within deadlineSeconds + 10 s: code 11 saying so", { timeout: 60_000 }, async () => {
      const bridge = await fakeBridge(() => "hang");
      const e = await errorOf(env("ADD"), netconf({ socket: bridge.path, deadlineSeconds: 1 }));
      expect([e.code, e.details]).toEqual([
        11,
        details(bridge.path, "no answer within 11 s (deadlineSeconds 1 + 10)"),
      ]);
    });
  });

  describe("its JSON scanner reads what JSON.parse reads", () => {
    /** A key as JSON text: plain, or every character \u-escaped (JSON.parse reads both as the same key). */
    const keyText = (key: string, escaped: boolean) =>
      escaped
        ? `"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`
        : JSON.stringify(key);
    const ws = fc.constantFrom("", " ", "\n", "\t ", "\r\n  ");
    // Values that look like ours, nested, to check that only top-level keys count.
    const decoy = fc.dictionary(
      fc.constantFrom("socket", "failOpen", "cniVersion", "prevResult", "deadlineSeconds", "x"),
      fc.jsonValue({ maxDepth: 2 }),
    );
    const valueFor: Record<string, fc.Arbitrary<unknown>> = {
      cniVersion: fc.oneof(
        fc.constantFrom("1.0.0", "0.4.0"),
        fc.string({ unit: "binary", maxLength: 12 }),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      socket: fc.oneof(
        fc.string({ unit: "binary", maxLength: 40 }).map((s) => `${closedSocket}-${s}`),
        fc.string({ unit: "grapheme-ascii", maxLength: 8 }).map((s) => `${closedSocket}${s}`),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      failOpen: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
      deadlineSeconds: fc.oneof(
        fc.integer({ min: -2, max: 120 }),
        fc.double(),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      prevResult: fc.oneof(fc.constant(PREV_RESULT), fc.jsonValue({ maxDepth: 3 }), decoy),
      name: fc.string(),
      ipam: decoy,
      other: fc.jsonValue({ maxDepth: 3 }),
    };
    const member = fc
      .constantFrom(...Object.keys(valueFor))
      .chain((key) =>
        fc.tuple(
          fc.constant(key),
          valueFor[key] as fc.Arbitrary<unknown>,
          fc.boolean(),
          ws,
          ws,
          fc.integer({ min: 0, max: 3 }),
        ),
      );
    /** A netconf as text: members in any order, keys repeated (the last counts) or escaped, any whitespace. */
    const document = fc.tuple(fc.array(member, { maxLength: 8 }), ws).map(([members, end]) => {
      const body = members
        .map(
          ([key, value, escaped, before, after, indent]) =>
            `${before}${keyText(key, escaped)}${after}:${JSON.stringify(value, null, indent)}`,
        )
        .join(",");
      return `${end}{${body}}${end}`;
    });

    /** What the binary answers for ADD against a closed socket, computed from JSON.parse's reading. */
    function expectedReading(o: Record<string, unknown>) {
      const cniVersion = typeof o.cniVersion === "string" ? o.cniVersion : "1.0.0";
      const invalid = (): boolean => {
        if ("cniVersion" in o && typeof o.cniVersion !== "string") return true;
        if ("socket" in o) {
          const s = o.socket;
          if (typeof s !== "string" || s === "" || s.includes("\0") || Buffer.byteLength(s) > 107)
            return true;
        }
        if ("failOpen" in o && typeof o.failOpen !== "boolean") return true;
        if ("deadlineSeconds" in o) {
          const d = o.deadlineSeconds;
          if (typeof d !== "number" || !Number.isInteger(d) || d < 1 || d > 110) return true;
        }
        return false;
      };
      if (invalid()) return { code: 7, cniVersion };
      if (o.failOpen === true)
        return "prevResult" in o ? { prevResult: o.prevResult } : { code: 7, cniVersion };
      return {
        code: 11,
        cniVersion,
        socket: typeof o.socket === "string" ? o.socket : "/run/multus-ipmgr/cni/cni.sock",
      };
    }

    it("valid netconfs: the keys it reads, top level only, the last of a repeated key, escapes decoded", async () => {
      await fc.assert(
        fc.asyncProperty(document, async (text) => {
          const o = JSON.parse(text) as Record<string, unknown>;
          const expected = expectedReading(o);
          const r = await run(env("ADD"), text);
          if ("prevResult" in expected) {
            expect(r.code).toBe(0);
            expect(text).toContain(r.stdout);
            expect(JSON.parse(r.stdout)).toEqual(expected.prevResult);
            return;
          }
          expect(r.code).toBe(1);
          const e = JSON.parse(r.stdout) as { cniVersion: string; code: number; details: string };
          expect([e.code, e.cniVersion]).toEqual([expected.code, expected.cniVersion]);
          if (expected.socket !== undefined)
            expect(e.details).toContain(`the bridge at ${expected.socket} is unreachable`);
        }),
        { numRuns: 150 },
      );
    });

    /** Whether the binary refuses the text as undecodable (code 6), for ADD. */
    async function refusesAsUndecodable(text: string): Promise<boolean> {
      const r = await run(env("ADD"), text);
      return r.code !== 0 && r.stdout !== "" && (JSON.parse(r.stdout) as { code: number }).code === 6;
    }
    const parsesToObject = (text: string): boolean => {
      try {
        const v: unknown = JSON.parse(text);
        return typeof v === "object" && v !== null && !Array.isArray(v);
      } catch {
        return false;
      }
    };

    // JSON's own escapes are written with String.raw; the other strings hold the raw characters.
    it.each([
      '{"a":01}',
      '{"a":-01}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":-}',
      '{"a":1e}',
      '{"a":1e+}',
      '{"a":+1}',
      '{"a":1E+2}',
      '{"a":-0.0e-0}',
      '{"a":"\u001f"}',
      String.raw`{"a":"\u001f"}`,
      String.raw`{"a":"\x"}`,
      String.raw`{"a":"\u12"}`,
      String.raw`{"a":"\u12g4"}`,
      String.raw`{"a":"\ud800"}`,
      String.raw`{"a":"\/\b\f\n\r\t\"\\"}`,
      String.raw`{"a":"\'"}`,
      String.raw`{"a":"\"}`,
      '{"a":tru}',
      '{"a":truee}',
      '{"a":nul}',
      '{"a":[1,]}',
      '{"a":1,}',
      "{,}",
      '{"a" 1}',
      '{"a":1}}',
      '{"a":[1 2]}',
      '{"a":{"b"}}',
      '{"a":{}}',
      '{"a":[]}',
      ' \t\r\n{"a":1} \n',
      '{"a":1}\u00a0',
      '\ufeff{"a":1}',
      '{\u000b"a":1}',
      "{'a':1}",
      '{"a":NaN}',
      '{"a":Infinity}',
      '{"a":"tab\there"}',
    ])("reads %j as JSON.parse does", async (text) => {
      expect(await refusesAsUndecodable(text)).toBe(!parsesToObject(text));
    });

    it("broken texts: refused (code 6) exactly when JSON.parse throws or reads no object", async () => {
      const edit = fc.tuple(
        fc.nat(),
        fc.constantFrom(
          "",
          "{",
          "}",
          "[",
          "]",
          '"',
          ",",
          ":",
          "\\",
          " ",
          "0",
          "-",
          ".",
          "e",
          "t",
          "n",
          "u",
          "\u00e9",
          "\u00a0",
          "E",
          "+",
          "1",
        ),
        fc.boolean(),
      );
      // Control characters, raw: JSON allows none of them in a string, and only four as whitespace.
      const controlEdit = fc.tuple(
        fc.nat(),
        fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
        fc.boolean(),
      );
      const broken = fc
        .tuple(document, fc.array(fc.oneof(edit, controlEdit), { minLength: 1, maxLength: 3 }))
        .map(([text, edits]) => {
          let t = text;
          for (const [at, char, replace] of edits) {
            const i = at % (t.length + 1);
            t = t.slice(0, i) + char + t.slice(replace ? i + 1 : i);
          }
          return t;
        });
      await fc.assert(
        fc.asyncProperty(broken, async (text) => {
          expect(await refusesAsUndecodable(text)).toBe(!parsesToObject(text));
        }),
        { numRuns: 200 },
      );
    });
  });
});
