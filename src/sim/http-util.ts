import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Request bodies larger than this are refused by default (EC2 Query requests are small). */
const defaultMaxBodyBytes = 1024 * 1024;

export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
  constructor(readonly maxBytes: number) {
    super(`request body exceeds ${maxBytes} bytes`);
  }
}

export async function readBody(req: IncomingMessage, maxBytes = defaultMaxBodyBytes): Promise<string> {
  return (await readBodyBytes(req, maxBytes)).toString("utf8");
}

/** The request's body as bytes, up to `maxBytes` (BodyTooLargeError beyond). */
export async function readBodyBytes(req: IncomingMessage, maxBytes = defaultMaxBodyBytes): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new BodyTooLargeError(maxBytes);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Listens and resolves with the bound port (useful with port 0). */
export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting, then drops every connection, hung requests included, so close() never waits on them. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close((error) => (error === undefined ? resolve() : reject(error)));
    server.closeAllConnections();
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, {
    "content-type": "text/plain",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** `http://host:port`, with brackets around an IPv6 host. */
export function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
