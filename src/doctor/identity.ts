/** The instance identity document (`/latest/dynamic/instance-identity/document`), the fields doctor uses. */
export interface InstanceIdentity {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly region: string;
  readonly availabilityZone: string;
  readonly accountId: string;
}

export const IDENTITY_DOCUMENT_PATH = "/latest/dynamic/instance-identity/document";

/** Parses the document; throws an Error naming what is missing when it is not the JSON IMDS serves. */
export function parseIdentityDocument(text: string): InstanceIdentity {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`IMDS ${IDENTITY_DOCUMENT_PATH} is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
  const record = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  const field = (key: string): string => {
    const v = record[key];
    if (typeof v !== "string" || v === "") {
      throw new Error(`IMDS ${IDENTITY_DOCUMENT_PATH} has no ${key}`);
    }
    return v;
  };
  return {
    instanceId: field("instanceId"),
    instanceType: field("instanceType"),
    region: field("region"),
    availabilityZone: field("availabilityZone"),
    accountId: field("accountId"),
  };
}
