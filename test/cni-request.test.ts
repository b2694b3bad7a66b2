import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  parseCniArgs,
  parseNetConf,
  sandboxAddresses,
} from "../src/ipam-whereabouts-bridge/cni/cni-netconf.js";
import { podsWithClaims } from "../src/ipam-whereabouts-bridge/cni/cni-pods.js";
import {
  CNI_COMMANDS,
  type CniRequest,
  frameCniRequest,
  parseCniRequest,
} from "../src/ipam-whereabouts-bridge/cni/cni-request.js";
import {
  CniCode,
  encodeAnswer,
  errorAnswer,
  passThrough,
} from "../src/ipam-whereabouts-bridge/cni/cni-result.js";
import { CniError } from "../src/ipam-whereabouts-bridge/cni/errors/cni-error.js";
import type { PodInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { podNetworks } from "../src/ipam-whereabouts-bridge/state/pod-networks.js";
import { ipvlanResult } from "./helpers/cni-socket-client.js";

const request: CniRequest = {
  command: "ADD",
  containerId: "c0ffee",
  netns: "/var/run/netns/cni-1",
  ifname: "net1",
  args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=cnf;K8S_POD_NAME=upf-0",
  path: "/opt/cni/bin",
  stdin: '{"cniVersion":"1.0.0"}',
};

function codeOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof CniError) return error.code;
    throw error;
  }
  return undefined;
}

describe("the plugin's request on the socket", () => {
  it("is parsed back into the parts it was framed from", () => {
    expect(parseCniRequest(frameCniRequest(request))).toEqual(request);
  });

  it("keeps a body with blank lines and no trailing newline byte for byte", () => {
    const stdin = '{\n\n"a": "b"\n}\n\n';
    expect(parseCniRequest(frameCniRequest({ ...request, stdin })).stdin).toBe(stdin);
  });

  it.each([
    ["no blank line after the header", "MULTUS-IPMGR-CNI 1\nCNI_COMMAND=ADD\n", CniCode.decode],
    ["another protocol version", "MULTUS-IPMGR-CNI 2\n\n{}", CniCode.decode],
    ["a variable missing", "MULTUS-IPMGR-CNI 1\nCNI_COMMAND=ADD\nCNI_CONTAINERID=x\n\n{}", CniCode.decode],
    [
      "variables out of order",
      "MULTUS-IPMGR-CNI 1\nCNI_CONTAINERID=x\nCNI_COMMAND=ADD\nCNI_NETNS=\nCNI_IFNAME=\nCNI_ARGS=\nCNI_PATH=\n\n{}",
      CniCode.decode,
    ],
    [
      "VERSION, which the binary answers itself",
      "MULTUS-IPMGR-CNI 1\nCNI_COMMAND=VERSION\nCNI_CONTAINERID=\nCNI_NETNS=\nCNI_IFNAME=\nCNI_ARGS=\nCNI_PATH=\n\n{}",
      CniCode.invalidEnvironment,
    ],
    [
      "an empty command",
      "MULTUS-IPMGR-CNI 1\nCNI_COMMAND=\nCNI_CONTAINERID=\nCNI_NETNS=\nCNI_IFNAME=\nCNI_ARGS=\nCNI_PATH=\n\n{}",
      CniCode.invalidEnvironment,
    ],
  ])("refuses %s", (_name, text, code) => {
    expect(codeOf(() => parseCniRequest(Buffer.from(text)))).toBe(code);
  });

  it("frames then parses any request to its parts (property)", () => {
    const value = fc.string({ maxLength: 40 }).filter((s) => !s.includes("\n"));
    fc.assert(
      fc.property(
        fc.record({
          command: fc.constantFrom(...CNI_COMMANDS),
          containerId: value,
          netns: value,
          ifname: value,
          args: value,
          path: value,
          stdin: fc.string({ maxLength: 200 }),
        }),
        (r) => {
          expect(parseCniRequest(frameCniRequest(r))).toEqual(r);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the netconf, prevResult and CNI_ARGS", () => {
  const conf = (extra: Record<string, unknown>) =>
    JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "multus-ipmgr", ...extra });

  it("reads the keys it knows, defaults the others and ignores the rest", () => {
    const parsed = parseNetConf(conf({ ipam: { type: "whereabouts" }, prevResult: { ips: [] } }));
    expect(parsed).toEqual({
      cniVersion: "1.0.0",
      name: "net",
      type: "multus-ipmgr",
      failOpen: false,
      deadlineSeconds: 30,
      rawPrevResult: { ips: [] },
    });
  });

  it.each([
    ["not JSON", "{", CniCode.decode],
    ["a cniVersion it does not speak", conf({ cniVersion: "0.2.0" }), CniCode.incompatibleVersion],
    ["deadlineSeconds 0", conf({ deadlineSeconds: 0 }), CniCode.invalidNetconf],
    ["deadlineSeconds 111", conf({ deadlineSeconds: 111 }), CniCode.invalidNetconf],
    ["deadlineSeconds 1.5", conf({ deadlineSeconds: 1.5 }), CniCode.invalidNetconf],
    ["failOpen as a string", conf({ failOpen: "true" }), CniCode.invalidNetconf],
    ["no name", JSON.stringify({ cniVersion: "1.0.0", type: "multus-ipmgr" }), CniCode.invalidNetconf],
  ])("refuses %s", (_name, text, code) => {
    expect(codeOf(() => parseNetConf(text))).toBe(code);
  });

  it.each(["1.0.0", "0.4.0", "0.3.1"])(
    "reads a %s prevResult: sandbox addresses with their MAC",
    (version) => {
      const prev = ipvlanResult("02:00:00:00:01:01", ["198.51.100.193", "2001:db8:100:2::c1"], version);
      (prev.interfaces as unknown[]).push({ name: "eth1", mac: "02:00:00:00:01:09" });
      (prev.ips as unknown[]).push({ address: "198.51.100.200/25", interface: 1 });
      expect(sandboxAddresses(prev)).toEqual([
        { address: "198.51.100.193", interfaceName: "net1", mac: "02:00:00:00:01:01" },
        { address: "2001:db8:100:2::c1", interfaceName: "net1", mac: "02:00:00:00:01:01" },
      ]);
    },
  );

  it("refuses an ip whose interface index is out of range, and a sandbox interface with no MAC", () => {
    expect(
      codeOf(() => sandboxAddresses({ interfaces: [], ips: [{ address: "198.51.100.1/25", interface: 0 }] })),
    ).toBe(CniCode.invalidNetconf);
    expect(
      codeOf(() =>
        sandboxAddresses({
          interfaces: [{ name: "net1", sandbox: "/ns" }],
          ips: [{ address: "198.51.100.1/25", interface: 0 }],
        }),
      ),
    ).toBe(CniCode.invalidNetconf);
  });

  it("parses CNI_ARGS as Multus passes them, and refuses a pair with no =", () => {
    expect(
      Object.fromEntries(parseCniArgs("IgnoreUnknown=true;K8S_POD_NAMESPACE=cnf;K8S_POD_NAME=a=b;")),
    ).toEqual({
      IgnoreUnknown: "true",
      K8S_POD_NAMESPACE: "cnf",
      K8S_POD_NAME: "a=b",
    });
    expect(codeOf(() => parseCniArgs("K8S_POD_NAME"))).toBe(CniCode.invalidEnvironment);
  });
});

describe("the answers", () => {
  it("passes prevResult through with the same JSON value (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const answer = passThrough(JSON.parse(JSON.stringify(value)));
        expect(answer.exitCode).toBe(0);
        expect(JSON.parse(answer.body)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 200 },
    );
  });

  it("writes an error in the netconf's version, 1.0.0 when it has none it speaks", () => {
    const error = new CniError(11, "the bridge is stopping", "retry");
    expect(errorAnswer(error, "0.4.0")).toEqual({
      exitCode: 1,
      body: '{"cniVersion":"0.4.0","code":11,"msg":"the bridge is stopping","details":"retry"}',
    });
    expect(JSON.parse(errorAnswer(error, "9.9.9").body).cniVersion).toBe("1.0.0");
    expect(encodeAnswer({ exitCode: 0, body: "" }).toString()).toBe("0\n");
  });
});

describe("the node's pods with the plugin's claims", () => {
  const claim = {
    pod: { namespace: "cnf", name: "upf-1", uid: "u1" },
    interfaceName: "net1",
    mac: "02:00:00:00:01:01",
    eniId: "eni-0a1",
    address: "198.51.100.194",
    network: "multus-ipvlan",
  };
  const pod = (annotations: Record<string, string> = {}): PodInfo => ({
    namespace: "cnf",
    name: "upf-1",
    uid: "u1",
    nodeName: "node",
    deleting: false,
    annotations,
    containers: [],
  });
  const addresses = (pods: PodInfo[]) =>
    pods.flatMap((p) => podNetworks(p).attachments.flatMap((a) => a.addresses));

  it("stands in for a pod the view does not have yet", () => {
    const pods = podsWithClaims([], [claim], [], "node");
    expect(pods.map((p) => [p.name, p.nodeName])).toEqual([["upf-1", "node"]]);
    expect(addresses(pods)).toEqual(["198.51.100.194"]);
  });

  it("merges with the pod once Multus wrote the address: one entry, not two", () => {
    const status = JSON.stringify([
      { name: "cnf/multus-ipvlan", interface: "net1", mac: "02:00:00:00:01:01", ips: ["198.51.100.194"] },
    ]);
    const pods = podsWithClaims([pod({ "k8s.v1.cni.cncf.io/network-status": status })], [claim], [], "node");
    expect(pods).toHaveLength(1);
    expect(addresses(pods)).toEqual(["198.51.100.194"]);
  });

  it("adds the claim to the pod in the view before Multus wrote it", () => {
    const pods = podsWithClaims([pod()], [claim], [], "node");
    expect(pods).toHaveLength(1);
    expect(addresses(pods)).toEqual(["198.51.100.194"]);
  });

  it("takes a DEL's address out of its own pod, not out of another", () => {
    const status = JSON.stringify([
      { name: "cnf/multus-ipvlan", interface: "net1", mac: "02:00:00:00:01:01", ips: ["198.51.100.194"] },
    ]);
    const other = { ...pod({ "k8s.v1.cni.cncf.io/network-status": status }), name: "upf-2", uid: "u2" };
    const tomb = { pod: claim.pod, address: "198.51.100.194", at: 0 };
    const pods = podsWithClaims(
      [pod({ "k8s.v1.cni.cncf.io/network-status": status }), other],
      [],
      [tomb],
      "node",
    );
    expect(pods.map((p) => addresses([p]))).toEqual([[], ["198.51.100.194"]]);
  });
});
