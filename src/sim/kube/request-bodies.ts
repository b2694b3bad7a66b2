import type { IncomingMessage } from "node:http";
import { parse as parseYaml } from "yaml";
import { KubeApiError } from "../errors/kube-api-error.js";
import { BodyTooLargeError, readBodyBytes } from "../http-util.js";
import { decodeKubeProtobuf, protobufContentType } from "./protobuf.js";

/** Request bodies of the Kubernetes API, by the content types each verb accepts. */

async function bodyBytes(req: IncomingMessage): Promise<Buffer> {
  try {
    return await readBodyBytes(req);
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      throw new KubeApiError(413, "RequestEntityTooLarge", `Request entity too large: ${error.message}`);
    }
    throw error;
  }
}

export async function jsonBody(req: IncomingMessage, optional = false): Promise<unknown> {
  const text = (await bodyBytes(req)).toString("utf8");
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new KubeApiError(400, "BadRequest", "the request body is empty; send the object as JSON");
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new KubeApiError(400, "BadRequest", `the request body is not JSON: ${(error as Error).message}`);
  }
}

/** An apply's configuration: YAML (JSON is YAML too). */
export async function yamlBody(req: IncomingMessage): Promise<unknown> {
  const text = (await bodyBytes(req)).toString("utf8");
  try {
    return parseYaml(text) as unknown;
  } catch (error) {
    throw new KubeApiError(
      400,
      "BadRequest",
      `the applied configuration is not YAML: ${(error as Error).message}`,
    );
  }
}

/** A delete's DeleteOptions, JSON or protobuf, or undefined without a body. */
export async function deleteBody(req: IncomingMessage): Promise<unknown> {
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
  if (contentType !== protobufContentType) return jsonBody(req, true);
  const bytes = await bodyBytes(req);
  return bytes.length === 0 ? undefined : decodeKubeProtobuf(bytes);
}

/**
 * The object of a create or update: JSON, or protobuf for the kinds protobuf.ts reads (helm's release
 * Secrets come that way); anything else is 415.
 */
export async function objectBody(req: IncomingMessage): Promise<unknown> {
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
  if (contentType === protobufContentType) return decodeKubeProtobuf(await bodyBytes(req));
  if (contentType !== "" && contentType !== "application/json" && contentType !== "*/*") {
    throw new KubeApiError(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format (${contentType}) - accepted media types include: application/json, ${protobufContentType}`,
    );
  }
  return jsonBody(req);
}
