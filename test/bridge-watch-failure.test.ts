/** The sentence the bridge gives for a failed list or watch (describeWatchFailure): cause, then fix. Pure. */
import { describe, expect, it } from "vitest";
import {
  describeWatchFailure,
  KubeHttpError,
} from "../src/ipam-whereabouts-bridge/kube/kube-watch-source.js";
import { ListTimeoutError } from "../src/ipam-whereabouts-bridge/kube/reflector.js";

const SERVER = "https://192.0.2.1:443";
const errno = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("describeWatchFailure", () => {
  it.each([
    [
      "a refused connection",
      errno("connect ECONNREFUSED 192.0.2.1:443", "ECONNREFUSED"),
      `the pods watch fails: ${SERVER} refused the connection; check that the API server is up and reachable from this node`,
    ],
    [
      "a connection closed before an answer (socket hang up), as a proxy's timeout does",
      errno("socket hang up", "ECONNRESET"),
      `the pods watch fails: the connection to ${SERVER} was closed before an answer (socket hang up); a proxy or load balancer between, or the API server, may cut requests it holds: check their timeouts, then the node's route to the API server`,
    ],
    [
      "a name that does not resolve",
      errno("getaddrinfo ENOTFOUND api.example", "ENOTFOUND"),
      `the pods watch fails: getaddrinfo ENOTFOUND api.example (${SERVER}); check the node's route to the API server`,
    ],
    [
      "a list not answered within its timeout",
      new ListTimeoutError("pods", 10_000),
      `the pods list was not answered within 10 s; the connection to ${SERVER} is taken as dead and restarted`,
    ],
    [
      "403",
      new KubeHttpError(403, "Forbidden", "pods is forbidden"),
      "the pods watch fails: 403 Forbidden (pods is forbidden); the bridge's ClusterRole lacks list/watch on pods: upgrade the chart (its ClusterRole grants it) or apply deploy/overlays/bridge/bridge-rbac.yaml",
    ],
  ])("%s", (_what, error, sentence) => {
    expect(describeWatchFailure("pods", SERVER, error).detail).toBe(sentence);
  });
});
