/**
 * The IAM policies in deploy/iam/ grant exactly the EC2 actions each mode can send, derived from the code
 * (see helpers/ec2-call-graph.ts), and scope them as the Service Authorization Reference allows
 * ("Actions, resources, and condition keys for Amazon EC2"; docs/install-eks.md, "IAM").
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  analyzeAdapter,
  commandEntries,
  documentedActions,
  findAdapters,
  interfaceMethodNames,
  reachableModules,
  runtimeImports,
  sourceFiles,
  TAG_ON_CREATE_ACTION,
  usedMethods,
} from "./helpers/ec2-call-graph.js";

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");
const IAM = join(ROOT, "deploy", "iam");

type Mode = "pod" | "bridge";

/**
 * The IAM role each command runs with. `sim` is the simulator: it answers EC2 calls and sends none.
 * A new command fails the test until it is placed here (doctor runs with the pod's role, or one of its own).
 */
const COMMAND_MODE: Readonly<Record<string, Mode | "none">> = {
  init: "pod",
  sidecar: "pod",
  // Run in the pod's container (kubectl exec), with the pod's role.
  doctor: "pod",
  bridge: "bridge",
  sim: "none",
  // The links agent reads IMDS and the node's links; it makes no EC2 call.
  links: "none",
};

/**
 * Until `multus-ipmgr bridge` exists (issue 10), its policy is checked against the Ec2Api methods the
 * issue specifies: it reads ENIs, moves addresses as the core does, and keeps subnet CIDR reservations
 * (read, create tagged as ours, delete its own). Once the command is in src/cli/dispatch.ts, its code decides.
 */
const PLANNED_BRIDGE_METHODS = [
  "describeNetworkInterfaces",
  "assignPrivateIpv4",
  "unassignPrivateIpv4",
  "assignIpv6",
  "unassignIpv6",
  "getSubnetCidrReservations",
  "createSubnetCidrReservation",
  "deleteSubnetCidrReservation",
];

/** Elastic IP actions: granted by the opt-in deploy/iam/iam-policy-elastic-ips.json, never by the pod policy. */
const ELASTIC_IP_ACTIONS = new Set([
  "AllocateAddress",
  "AssociateAddress",
  "DescribeAddresses",
  "DescribeAddressesAttribute",
  "DisassociateAddress",
  "ModifyAddressAttribute",
  "ReleaseAddress",
  "ResetAddressAttribute",
]);

const POLICY_FILES = {
  pod: "iam-policy-pod.json",
  bridge: "iam-policy-bridge.json",
  elasticIps: "iam-policy-elastic-ips.json",
  attach: "iam-policy-attach.json",
} as const;

/** The placeholder of the attach policy's conditions; the chart's NOTES put IPMGR_CLUSTER_NAME there. */
const CLUSTER_PLACEHOLDER = "<CLUSTER_NAME>";
const CLUSTER_TAG = "multus-ipmgr.io/cluster";
const NETWORK_INTERFACE = "arn:aws:ec2:*:*:network-interface/*";

/**
 * What the attach policy grants, exactly, one row per action and resource, as the Service Authorization
 * Reference scopes them: CreateNetworkInterface authorizes the new network-interface (where aws:RequestTag
 * applies) and, separately, the subnet and security groups it names; CreateTags only as part of that create
 * (ec2:CreateAction); AttachNetworkInterface the network-interface and the instance; Attach, Delete and
 * ModifyNetworkInterfaceAttribute on an ENI carrying the cluster's tag (aws:ResourceTag); DescribeSecurityGroups
 * takes no resource type.
 */
const ATTACH_GRANTS = [
  { action: "DescribeSecurityGroups", resource: "*" },
  {
    action: "CreateNetworkInterface",
    resource: NETWORK_INTERFACE,
    condition: { StringEquals: { [`aws:RequestTag/${CLUSTER_TAG}`]: CLUSTER_PLACEHOLDER } },
  },
  { action: "CreateNetworkInterface", resource: "arn:aws:ec2:*:*:subnet/*" },
  { action: "CreateNetworkInterface", resource: "arn:aws:ec2:*:*:security-group/*" },
  {
    action: "CreateTags",
    resource: NETWORK_INTERFACE,
    condition: { StringEquals: { "ec2:CreateAction": "CreateNetworkInterface" } },
  },
  ...["AttachNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute"].map(
    (action) => ({
      action,
      resource: NETWORK_INTERFACE,
      condition: { StringEquals: { [`aws:ResourceTag/${CLUSTER_TAG}`]: CLUSTER_PLACEHOLDER } },
    }),
  ),
  { action: "AttachNetworkInterface", resource: "arn:aws:ec2:*:*:instance/*" },
];

const NO_MANAGE = { StringEquals: { "aws:ResourceTag/node.k8s.amazonaws.com/no_manage": "true" } };
const ANY = { resource: "*" } as const;
const TAGGED_MULTUS_ENI = { resource: "arn:aws:ec2:*:*:network-interface/*", condition: NO_MANAGE } as const;
/** The tag an Elastic IP must carry for the opt-in policy to let us associate it (docs/sidecar.md). */
const FOLLOWS_FLOATING_ADDRESS = {
  StringEquals: { "aws:ResourceTag/multus-ipmgr.io/follows-floating-address": "true" },
};

/**
 * AssociateAddress names two resources in our calls (AllocationId and NetworkInterfaceId): the reference
 * lists elastic-ip (required) and network-interface for it, each with aws:ResourceTag. Both are scoped by
 * tag, one statement each, so that the call needs a tagged Elastic IP and a Multus ENI.
 */
const ASSOCIATE_ADDRESS_SCOPES = [
  { resource: "arn:aws:ec2:*:*:elastic-ip/*", condition: FOLLOWS_FLOATING_ADDRESS },
  TAGGED_MULTUS_ENI,
];

/**
 * How a policy must scope each action we know, per the Service Authorization Reference: the four address
 * calls accept the network-interface resource and the aws:ResourceTag condition key, so they are limited to
 * ENIs tagged no_manage; DescribeNetworkInterfaces, DescribeSecurityGroups, GetSubnetCidrReservations and
 * DeleteSubnetCidrReservation accept no resource type ("*" only); CreateSubnetCidrReservation takes the
 * subnet; CreateTags, its dependent action, is limited to the new reservation at its creation.
 */
function requiredScope(
  action: string,
  taggedAtCreate: readonly string[],
  file: string,
): { resource: string; condition?: unknown } | undefined {
  if (file === POLICY_FILES.attach) {
    // Attach mode's own rows are checked whole against ATTACH_GRANTS.
    return action === "DescribeSecurityGroups" ? ANY : undefined;
  }
  switch (action) {
    case "AssignPrivateIpAddresses":
    case "UnassignPrivateIpAddresses":
    case "AssignIpv6Addresses":
    case "UnassignIpv6Addresses":
      return TAGGED_MULTUS_ENI;
    case "DescribeNetworkInterfaces":
    case "DescribeInstanceTypes":
    case "DescribeSecurityGroups":
    case "GetSubnetCidrReservations":
    case "DeleteSubnetCidrReservation":
      return ANY;
    case "CreateSubnetCidrReservation":
      return { resource: "arn:aws:ec2:*:*:subnet/*" };
    case TAG_ON_CREATE_ACTION:
      return {
        resource: "arn:aws:ec2:*:*:subnet-cidr-reservation/*",
        condition: {
          StringEquals: {
            "ec2:CreateAction": taggedAtCreate.length === 1 ? taggedAtCreate[0] : [...taggedAtCreate].sort(),
          },
        },
      };
    default:
      return undefined;
  }
}

interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: string | string[];
  readonly Condition?: unknown;
}

interface Policy {
  readonly Version: string;
  readonly Statement: Statement[];
}

function readPolicy(name: string): Policy {
  return JSON.parse(readFileSync(join(IAM, name), "utf8")) as Policy;
}

const list = (value: string | string[]): string[] => (Array.isArray(value) ? value : [value]);

/** The EC2 actions a policy allows, without the `ec2:` prefix. */
function policyActions(policy: Policy): Set<string> {
  return new Set(policy.Statement.flatMap((s) => list(s.Action)).map((a) => a.replace(/^ec2:/, "")));
}

const sorted = (set: Iterable<string>): string[] => [...set].sort();

// ---- The model of the code -------------------------------------------------------------------------------

const adapters = findAdapters(ROOT, SRC, join(SRC, "sim"));
const adapterInterfaces = new Set(adapters.flatMap((a) => a.interfaces));
const interfaceTexts = sourceFiles(SRC)
  .map((f) => readFileSync(f, "utf8"))
  .filter((text) => [...adapterInterfaces].some((name) => text.includes(`interface ${name}`)));
const interfaceMethods = new Set(
  [...adapterInterfaces].flatMap((name) =>
    interfaceTexts.flatMap((text) => interfaceMethodNames(text, name)),
  ),
);
const commands = commandEntries(join(SRC, "cli", "dispatch.ts"));

/**
 * Attach mode's port (src/eni/ec2-eni-lifecycle-api.ts): its methods, and the IAM actions their comments name
 * (the first list after "IAM:", and ec2:CreateTags where a comment names it for tags at creation).
 */
const LIFECYCLE = "Ec2EniLifecycleApi";
const lifecycleText = readFileSync(join(SRC, "eni", "ec2-eni-lifecycle-api.ts"), "utf8");
const lifecycleMethods = new Set(interfaceMethodNames(lifecycleText, LIFECYCLE));
const lifecycleActions = new Set([
  ...[...documentedActions(lifecycleText, LIFECYCLE).values()].flatMap((actions) => [...actions]),
  ...([...lifecycleText.matchAll(/\/\*\*[\s\S]*?\*\//g)].some(
    ([doc]) => doc.includes("IAM:") && doc.includes(`ec2:${TAG_ON_CREATE_ACTION}`),
  )
    ? [TAG_ON_CREATE_ACTION]
    : []),
]);
/** The methods of the other interfaces: what the pod, bridge and Elastic IP policies are checked against. */
const coreMethods = new Set([...interfaceMethods].filter((m) => !lifecycleMethods.has(m)));

interface Sends {
  readonly operations: Set<string>;
  /** Operations sent with tags at creation (they need ec2:CreateTags too). */
  readonly taggedAtCreate: Set<string>;
}

function sendsOf(methods: Iterable<string>): Sends {
  const out: Sends = { operations: new Set(), taggedAtCreate: new Set() };
  for (const method of methods) {
    for (const adapter of adapters) {
      for (const op of adapter.methodOperations.get(method) ?? []) out.operations.add(op);
      for (const op of adapter.methodTaggedOperations.get(method) ?? []) out.taggedAtCreate.add(op);
    }
  }
  return out;
}

/** The operations a method sends with DryRun only (permission probes: they need no grant). */
function probesOf(method: string): Set<string> {
  return new Set(adapters.flatMap((a) => [...(a.methodProbedOperations.get(method) ?? [])]));
}

/** The IAM actions a set of methods needs: the operations, plus CreateTags for tags at creation. */
function actionsOf(sends: Sends): Set<string> {
  const actions = new Set(sends.operations);
  if (sends.taggedAtCreate.size > 0) actions.add(TAG_ON_CREATE_ACTION);
  return actions;
}

function methodsOfCommand(command: string): Set<string> {
  const entries = commands.get(command) ?? [];
  return usedMethods(reachableModules(entries), interfaceMethods, adapterInterfaces);
}

function methodsOfMode(mode: Mode): Set<string> {
  const methods = new Set<string>();
  for (const [command, m] of Object.entries(COMMAND_MODE)) {
    if (m !== mode || !commands.has(command)) continue;
    for (const method of methodsOfCommand(command)) methods.add(method);
  }
  return methods;
}

const bridgeBuilt = commands.has("bridge");

// ---- Tests -----------------------------------------------------------------------------------------------

describe("the EC2 call graph (test helper), on small modules", () => {
  const adapter = analyzeAdapter(
    "fixture.ts",
    `import { AlphaCommand, BetaCommand, GammaCommand, type DeltaCommand, EC2Client } from "@aws-sdk/client-ec2";
     function sendGamma(client, tags) {
       return client.send(new GammaCommand({ ...(tags.length > 0 ? { TagSpecifications: tags } : {}) }));
     }
     class Adapter implements Api {
       constructor(private readonly client: EC2Client) {}
       async alpha() { await this.client.send(new AlphaCommand({})); await this.check(); }
       async gamma() { return sendGamma(this.client); }
       private async check() { return this.client.send(new BetaCommand({})); }
     }`,
  );

  it("follows private methods and module functions, and sees tags at creation", () => {
    expect(adapter.interfaces).toEqual(["Api"]);
    expect(sorted(adapter.methodOperations.get("alpha") ?? [])).toEqual(["Alpha", "Beta"]);
    expect(sorted(adapter.methodOperations.get("gamma") ?? [])).toEqual(["Gamma"]);
    expect(sorted(adapter.methodTaggedOperations.get("gamma") ?? [])).toEqual(["Gamma"]);
    expect(adapter.methodOperations.has("check")).toBe(false);
  });

  it("records a command sent with DryRun: true as a probe, not as an operation needing a grant", () => {
    const probe = analyzeAdapter(
      "probe.ts",
      `import { AlphaCommand, GammaCommand } from "@aws-sdk/client-ec2";
       class Adapter implements Api {
         async probe() { await this.client.send(new GammaCommand({ DryRun: true, TagSpecifications: [] })); }
         async alpha() { await this.client.send(new AlphaCommand({ DryRun: false })); }
       }`,
    );
    expect(sorted(probe.methodOperations.get("probe") ?? [])).toEqual([]);
    expect(sorted(probe.methodTaggedOperations.get("probe") ?? [])).toEqual([]);
    expect(sorted(probe.methodProbedOperations.get("probe") ?? [])).toEqual(["Gamma"]);
    expect(sorted(probe.methodOperations.get("alpha") ?? [])).toEqual(["Alpha"]);
    expect(probe.unreachedOperations.size).toBe(0);
  });

  it("counts value imports of XCommand only, and names a command no public method sends", () => {
    expect(sorted(adapter.importedOperations)).toEqual(["Alpha", "Beta", "Gamma"]);
    expect(adapter.unreachedOperations.size).toBe(0);
    const orphan = analyzeAdapter(
      "orphan.ts",
      `import { AlphaCommand } from "@aws-sdk/client-ec2";
       export const send = (c) => c.send(new AlphaCommand({}));`,
    );
    expect(sorted(orphan.unreachedOperations)).toEqual(["Alpha"]);
  });

  it("follows static and dynamic imports, not type-only ones", () => {
    expect(
      runtimeImports(
        "m.ts",
        `import { a } from "./a.js"; import type { B } from "./b.js"; import { type C } from "./c.js";
         export { d } from "./d.js"; export type { E } from "./e.js"; const f = () => import("./f.js");
         import { g } from "pino";`,
      ),
    ).toEqual(["./a.js", "./d.js", "./f.js"]);
  });

  it("reads the IAM action each interface method documents", () => {
    const text = `export interface Api {
      /** IAM: ec2:Alpha. Does alpha. */
      alpha(): Promise<void>;
      /** No IAM line. */
      beta(): void;
    }`;
    expect(interfaceMethodNames(text, "Api")).toEqual(["alpha", "beta"]);
    const documented = documentedActions(text, "Api");
    expect(sorted(documented.get("alpha") ?? [])).toEqual(["Alpha"]);
    expect(sorted(documented.get("beta") ?? [])).toEqual([]);
  });
});

describe("the EC2 adapters", () => {
  it("are found: src/eni/ec2-client.ts implements Ec2Api", () => {
    expect(adapters.map((a) => a.file)).toContain("src/eni/ec2-client.ts");
    expect(adapterInterfaces.has("Ec2Api")).toBe(true);
    expect(interfaceMethods.size).toBeGreaterThan(0);
  });

  it("send every command they import from a public method, so the call graph misses none", () => {
    for (const adapter of adapters) {
      expect({ file: adapter.file, unreached: sorted(adapter.unreachedOperations) }).toEqual({
        file: adapter.file,
        unreached: [],
      });
    }
  });

  it("send from each interface method the IAM action its doc comment names", () => {
    for (const name of adapterInterfaces) {
      for (const text of interfaceTexts) {
        for (const [method, documented] of documentedActions(text, name)) {
          // A method may send more than its own action: a refused assign re-reads the ENI. A probe
          // (DryRun) documents the actions it probes.
          const sent = new Set([...sendsOf([method]).operations, ...probesOf(method)]);
          expect({ method, documented: sorted(documented) }).toEqual({
            method,
            documented: sorted([...documented].filter((a) => sent.has(a))),
          });
          expect({ method, documents: documented.size > 0 }).toEqual({ method, documents: true });
        }
      }
    }
  });
});

describe("the commands", () => {
  it("are each given an IAM role in this test (a new command must be placed in COMMAND_MODE)", () => {
    expect(sorted(commands.keys()).filter((c) => !(c in COMMAND_MODE))).toEqual([]);
  });

  it("init and sidecar load their modules through src/cli/dispatch.ts", () => {
    expect(commands.get("init")).toEqual([join(SRC, "init", "main.ts")]);
    expect(commands.get("sidecar")).toContain(join(SRC, "sidecar", "main.ts"));
  });

  it("sim sends no EC2 call: its bundle (src/sim/main.ts, scripts/build.mjs) never loads an EC2 adapter", () => {
    expect(commands.get("sim")).toEqual([]);
    const simModules = reachableModules([join(SRC, "sim", "main.ts")]);
    expect(adapters.map((a) => join(ROOT, a.file)).filter((f) => simModules.has(f))).toEqual([]);
  });
});

describe("deploy/iam/iam-policy-*.json", () => {
  const files = readdirSync(IAM).filter((f) => /^iam-policy.*\.json$/.test(f));

  it("are the pod and bridge policies and the opt-in Elastic IP and attach ones, nothing this test does not check", () => {
    const known = new Set<string>(Object.values(POLICY_FILES));
    expect(files.filter((f) => !known.has(f))).toEqual([]);
    expect(files).toContain(POLICY_FILES.pod);
    expect(files).toContain(POLICY_FILES.bridge);
    expect(files).toContain(POLICY_FILES.attach);
  });

  it.each(files)("%s allows EC2 actions by name, with no wildcard, Deny or Not*", (file) => {
    const policy = readPolicy(file);
    expect(policy.Version).toBe("2012-10-17");
    for (const statement of policy.Statement) {
      expect(Object.keys(statement).sort()).toEqual(
        ["Action", "Condition", "Effect", "Resource", "Sid"].filter((k) => k in statement),
      );
      expect(statement.Effect).toBe("Allow");
      for (const action of list(statement.Action)) expect(action).toMatch(/^ec2:[A-Z][A-Za-z0-9]+$/);
    }
    // An action appears once per resource type it is granted on.
    const grants = policy.Statement.flatMap((s) =>
      list(s.Action).map((a) => `${a} on ${list(s.Resource).join()}`),
    );
    expect(new Set(grants).size).toBe(grants.length);
  });

  it.each(files)("%s scopes each action as the Service Authorization Reference allows", (file) => {
    const policy = readPolicy(file);
    const tagged = sorted(sendsOf(coreMethods).taggedAtCreate);
    for (const statement of policy.Statement) {
      for (const action of list(statement.Action).map((a) => a.replace(/^ec2:/, ""))) {
        if (action === "AssociateAddress") continue; // two resources, checked below
        const scope = requiredScope(action, tagged, file);
        if (scope === undefined) continue; // an action this table does not know: its file decides
        expect({ action, resource: statement.Resource, condition: statement.Condition }).toEqual({
          action,
          resource: scope.resource,
          condition: scope.condition,
        });
      }
    }
  });

  it.each(files)(
    "%s grants AssociateAddress only on tagged Elastic IPs and Multus ENIs, when it grants it",
    (file) => {
      const scopes = readPolicy(file)
        .Statement.filter((s) => list(s.Action).includes("ec2:AssociateAddress"))
        .map((s) => ({ resource: s.Resource, condition: s.Condition }));
      if (scopes.length > 0) expect(scopes).toEqual(ASSOCIATE_ADDRESS_SCOPES);
    },
  );

  it(`${POLICY_FILES.elasticIps} grants AssociateAddress (the one action it could misuse) only by tag`, () => {
    const statements = readPolicy(POLICY_FILES.elasticIps).Statement;
    const associate = statements.filter((s) => list(s.Action).includes("ec2:AssociateAddress"));
    expect(associate.map((s) => s.Resource)).not.toContain("*");
    expect(associate).toHaveLength(2);
  });

  const podSends = sendsOf(methodsOfMode("pod"));
  const podActions = actionsOf(podSends);
  const podElasticIp = new Set([...podActions].filter((a) => ELASTIC_IP_ACTIONS.has(a)));
  const podCore = new Set([...podActions].filter((a) => !ELASTIC_IP_ACTIONS.has(a)));

  it(`${POLICY_FILES.pod} allows exactly what init and sidecar can send (Elastic IP calls aside)`, () => {
    expect(
      sorted(policyActions(readPolicy(POLICY_FILES.pod))),
      `${POLICY_FILES.pod} (received) against the EC2 calls init and sidecar can send (expected)`,
    ).toEqual(sorted(podCore));
  });

  it(`${POLICY_FILES.elasticIps}, when present, allows exactly the Elastic IP calls init and sidecar can send`, () => {
    const present = existsSync(join(IAM, POLICY_FILES.elasticIps));
    expect({ present, needed: sorted(podElasticIp) }).toEqual({
      present: podElasticIp.size > 0,
      needed: sorted(podElasticIp),
    });
    if (present) {
      expect(
        sorted(policyActions(readPolicy(POLICY_FILES.elasticIps))),
        `${POLICY_FILES.elasticIps} (received) against the Elastic IP calls init and sidecar can send (expected)`,
      ).toEqual(sorted(podElasticIp));
    }
  });

  // Attach mode's calls are granted by iam-policy-attach.json, never by the bridge policy.
  const bridgeMethods = new Set(
    [...(bridgeBuilt ? methodsOfMode("bridge") : PLANNED_BRIDGE_METHODS)].filter(
      (m) => !lifecycleMethods.has(m),
    ),
  );
  const bridgeTitle = bridgeBuilt
    ? `${POLICY_FILES.bridge} allows exactly what bridge can send, attach mode's calls aside`
    : `${POLICY_FILES.bridge} allows exactly what the planned bridge (issue 10; not built yet) would send`;

  it(bridgeTitle, () => {
    for (const method of bridgeMethods) expect(interfaceMethods).toContain(method);
    const actions = actionsOf(sendsOf(bridgeMethods));
    expect(
      sorted(policyActions(readPolicy(POLICY_FILES.bridge))),
      `${POLICY_FILES.bridge} (received) against the EC2 calls the bridge can send (expected)`,
    ).toEqual(sorted(actions));
  });

  const bridgeActions = policyActions(readPolicy(POLICY_FILES.bridge));

  it(`${POLICY_FILES.attach} allows exactly the actions the IAM comments of ${LIFECYCLE} name, less the bridge policy's`, () => {
    expect(lifecycleMethods.size).toBeGreaterThan(0);
    expect(
      sorted(policyActions(readPolicy(POLICY_FILES.attach))),
      `${POLICY_FILES.attach} (received) against ${LIFECYCLE}'s IAM comments less ${POLICY_FILES.bridge} (expected)`,
      // CreateTags is granted per create action: the bridge's is for its reservations only.
    ).toEqual(
      sorted([...lifecycleActions].filter((a) => a === TAG_ON_CREATE_ACTION || !bridgeActions.has(a))),
    );
    expect(sorted(lifecycleActions)).toEqual(
      expect.arrayContaining(["AttachNetworkInterface", "CreateNetworkInterface", TAG_ON_CREATE_ACTION]),
    );
  });

  it(`${POLICY_FILES.attach} scopes each grant exactly: creates by request tag, tags at creation only, the rest by resource tag`, () => {
    const grants = readPolicy(POLICY_FILES.attach).Statement.flatMap((s) =>
      list(s.Action).flatMap((a) =>
        list(s.Resource).map((resource) => ({
          action: a.replace(/^ec2:/, ""),
          resource,
          ...(s.Condition === undefined ? {} : { condition: s.Condition }),
        })),
      ),
    );
    const key = (g: { action: string; resource: string }) => `${g.action} on ${g.resource}`;
    expect([...grants].sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
      [...ATTACH_GRANTS].sort((a, b) => key(a).localeCompare(key(b))),
    );
  });

  it(`${POLICY_FILES.bridge} does not grow with attach mode: it grants no ENI create, attach, modify or delete`, () => {
    const attachWrites = [...lifecycleActions].filter((a) => !a.startsWith("Describe"));
    expect(sorted(attachWrites.filter((a) => bridgeActions.has(a) && a !== TAG_ON_CREATE_ACTION))).toEqual(
      [],
    );
    const tagging = readPolicy(POLICY_FILES.bridge).Statement.filter((s) =>
      list(s.Action).includes(`ec2:${TAG_ON_CREATE_ACTION}`),
    );
    expect(tagging.map((s) => s.Resource)).not.toContain(NETWORK_INTERFACE);
  });

  it(`the adapter, once it implements ${LIFECYCLE}, tags at creation only the ENIs it creates`, () => {
    const tagged = sorted(sendsOf(lifecycleMethods).taggedAtCreate);
    expect(tagged.filter((op) => op !== "CreateNetworkInterface")).toEqual([]);
  });
});
