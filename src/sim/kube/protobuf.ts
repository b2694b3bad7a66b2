import { KubeApiError } from "../errors/kube-api-error.js";
import type { JsonObject } from "./kube-object.js";

/**
 * Reads the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`) of the few kinds client-go
 * sends only that way to the simulator: helm's storage driver creates, updates and deletes its release
 * Secrets with a typed client that encodes protobuf (the Secret, the DeleteOptions) and does not fall back
 * to JSON on a 415. The body is the `k8s\0`
 * magic, then a runtime.Unknown {typeMeta 1 {apiVersion 1, kind 2}, raw 2}; `raw` is the object, read
 * with the field numbers of k8s.io/api's generated.proto. Answers are JSON, which the client accepts too.
 */

/** How one field is read: a string, bytes (base64 in JSON), a bool, an integer, a time, a message, a map. */
type FieldType =
  | "string"
  | "bytes"
  | "bool"
  | "int"
  | "time"
  | "strings"
  | "stringMap"
  | "bytesMap"
  | { readonly message: Schema };

interface Schema {
  readonly [field: number]: readonly [name: string, type: FieldType];
}

const time: Schema = { 1: ["seconds", "int"], 2: ["nanos", "int"] };

const objectMeta: Schema = {
  1: ["name", "string"],
  2: ["generateName", "string"],
  3: ["namespace", "string"],
  5: ["uid", "string"],
  6: ["resourceVersion", "string"],
  7: ["generation", "int"],
  8: ["creationTimestamp", "time"],
  9: ["deletionTimestamp", "time"],
  10: ["deletionGracePeriodSeconds", "int"],
  11: ["labels", "stringMap"],
  12: ["annotations", "stringMap"],
  14: ["finalizers", "strings"],
};

/** The kinds read, by `apiVersion/kind`. */
const schemas: Readonly<Record<string, Schema>> = {
  "v1/Secret": {
    1: ["metadata", { message: objectMeta }],
    2: ["data", "bytesMap"],
    3: ["type", "string"],
    4: ["stringData", "stringMap"],
    5: ["immutable", "bool"],
  },
  "v1/ConfigMap": {
    1: ["metadata", { message: objectMeta }],
    2: ["data", "stringMap"],
    3: ["binaryData", "bytesMap"],
    4: ["immutable", "bool"],
  },
};

/** A delete's options (meta/v1 DeleteOptions), whatever apiVersion the envelope names. */
const deleteOptions: Schema = {
  1: ["gracePeriodSeconds", "int"],
  2: ["preconditions", { message: { 1: ["uid", "string"], 2: ["resourceVersion", "string"] } }],
  3: ["orphanDependents", "bool"],
  4: ["propagationPolicy", "string"],
  5: ["dryRun", "strings"],
};

const typeMeta: Schema = { 1: ["apiVersion", "string"], 2: ["kind", "string"] };
const unknown: Schema = { 1: ["typeMeta", { message: typeMeta }], 2: ["raw", "bytes"] };
const mapEntry: Schema = { 1: ["key", "string"], 2: ["value", "bytes"] };

export const protobufContentType = "application/vnd.kubernetes.protobuf";

function unsupported(detail: string): KubeApiError {
  return new KubeApiError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format (${protobufContentType}: ${detail}) - accepted media types include: application/json`,
  );
}

class Reader {
  #at = 0;
  constructor(readonly bytes: Buffer) {}

  get done(): boolean {
    return this.#at >= this.bytes.length;
  }

  varint(): bigint {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = this.bytes[this.#at++];
      if (byte === undefined || shift > 63n) throw unsupported("truncated varint");
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  }

  take(length: number): Buffer {
    if (this.#at + length > this.bytes.length) throw unsupported("truncated field");
    const out = this.bytes.subarray(this.#at, this.#at + length);
    this.#at += length;
    return out;
  }
}

/** Every field of one message: number, wire type, and the raw value (varint or bytes). */
function* fieldsOf(bytes: Buffer): Generator<{ field: number; value: bigint | Buffer }> {
  const reader = new Reader(bytes);
  while (!reader.done) {
    const key = Number(reader.varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) yield { field, value: reader.varint() };
    else if (wire === 2) yield { field, value: reader.take(Number(reader.varint())) };
    else if (wire === 1) reader.take(8);
    else if (wire === 5) reader.take(4);
    else throw unsupported(`wire type ${wire}`);
  }
}

function timeText(value: JsonObject): string {
  return `${new Date(Number(value.seconds ?? 0) * 1000).toISOString().slice(0, 19)}Z`;
}

function decode(bytes: Buffer, schema: Schema): JsonObject {
  const out: JsonObject = {};
  for (const { field, value } of fieldsOf(bytes)) {
    const spec = schema[field];
    if (spec === undefined) continue;
    const [name, type] = spec;
    if (typeof value === "bigint") {
      out[name] = type === "bool" ? value !== 0n : Number(value);
      continue;
    }
    if (type === "string") out[name] = value.toString("utf8");
    else if (type === "bytes") out[name] = value;
    else if (type === "strings") out[name] = [...((out[name] as string[]) ?? []), value.toString("utf8")];
    else if (type === "time") out[name] = timeText(decode(value, time));
    else if (type === "stringMap" || type === "bytesMap") {
      const entry = decode(value, mapEntry);
      const raw = (entry.value as Buffer | undefined) ?? Buffer.alloc(0);
      out[name] = {
        ...(out[name] as JsonObject | undefined),
        [String(entry.key ?? "")]: type === "stringMap" ? raw.toString("utf8") : raw.toString("base64"),
      };
    } else if (typeof type === "object") out[name] = decode(value, type.message);
  }
  return out;
}

/** The object a protobuf body carries, as JSON. Throws KubeApiError 415 for a kind not read here. */
export function decodeKubeProtobuf(body: Buffer): JsonObject {
  if (body.length < 4 || body.subarray(0, 4).toString("latin1") !== "k8s\0")
    throw unsupported("no k8s magic");
  const envelope = decode(body.subarray(4), unknown);
  const meta = (envelope.typeMeta as JsonObject | undefined) ?? {};
  const apiVersion = String(meta.apiVersion ?? "");
  const kind = String(meta.kind ?? "");
  const schema = kind === "DeleteOptions" ? deleteOptions : schemas[`${apiVersion}/${kind}`];
  if (schema === undefined) throw unsupported(`kind ${apiVersion}/${kind} is read only as JSON`);
  const raw = envelope.raw instanceof Buffer ? envelope.raw : Buffer.alloc(0);
  return { apiVersion, kind, ...decode(raw, schema) };
}
