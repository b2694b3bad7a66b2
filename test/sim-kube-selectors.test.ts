import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "../src/sim/kube/selectors.js";

const labels = { app: "upf", tier: "data", "example.com/zone": "a", count: "3", empty: "" };

describe("label selectors, as k8s.io/apimachinery/pkg/labels parses and matches them", () => {
  it.each([
    ["", true],
    ["app=upf", true],
    ["app==upf", true],
    ["app=smf", false],
    ["app!=smf", true],
    ["app!=upf", false],
    // `!=` and `notin` also select objects without the label.
    ["missing!=x", true],
    ["missing notin (x)", true],
    ["app in (upf,smf)", true],
    ["app in (smf, amf)", false],
    ["app notin (smf)", true],
    ["app notin (upf)", false],
    ["missing in (x)", false],
    ["app", true],
    ["missing", false],
    ["!missing", true],
    ["!app", false],
    ["example.com/zone=a", true],
    ["empty=", true],
    ["empty in (,x)", true],
    ["count>2", true],
    ["count<3", false],
    ["app=upf,tier=data", true],
    ["app=upf,tier=control", false],
    ["  app = upf ,  tier in ( data )  ", true],
  ])("%j selects %s", (selector, expected) => {
    expect(matchesLabels(parseLabelSelector(selector), labels)).toBe(expected);
  });

  it.each([
    ["app in upf", "found 'upf', expected: '('"],
    ["app in ()", "values set can't be empty"],
    ["app=upf extra", "expected: ',' or 'end of string'"],
    ["=upf", "found '=', expected: !, identifier"],
    ["count>x", "must be an integer"],
    ["-bad=x", 'invalid label key "-bad"'],
    ["app=-bad", 'invalid label value: "-bad"'],
    ["app in (a", "expected: ',' or ')'"],
  ])("refuses %j: %s", (selector, message) => {
    expect(() => parseLabelSelector(selector)).toThrow(SelectorError);
    expect(() => parseLabelSelector(selector)).toThrow(message);
  });

  it("matches an equality selector built from any label map exactly when the labels hold it", () => {
    const name = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
    fc.assert(
      fc.property(
        fc.dictionary(name, name, { maxKeys: 5 }),
        fc.dictionary(name, name, { maxKeys: 5 }),
        (wanted, actual) => {
          const selector = Object.entries(wanted)
            .map(([k, v]) => `${k}=${v}`)
            .join(",");
          const holds = Object.entries(wanted).every(([k, v]) => actual[k] === v);
          expect(matchesLabels(parseLabelSelector(selector), actual)).toBe(holds);
        },
      ),
    );
  });
});

describe("field selectors", () => {
  const fields = { "metadata.name": "upf-0", "spec.nodeName": "node-a", "status.podIP": "" };

  it.each([
    ["", true],
    ["spec.nodeName=node-a", true],
    ["spec.nodeName==node-a", true],
    ["spec.nodeName!=node-a", false],
    ["spec.nodeName=node-b", false],
    ["metadata.name=upf-0,spec.nodeName=node-a", true],
    ["metadata.name=upf-0,spec.nodeName=node-b", false],
    // An unset field is the empty string: `spec.nodeName=` selects unscheduled pods.
    ["status.podIP=", true],
    ["status.podIP!=", false],
  ])("%j selects %s", (selector, expected) => {
    expect(matchesFields(parseFieldSelector(selector), fields)).toBe(expected);
  });

  it("unescapes values and splits on unescaped commas only", () => {
    expect(parseFieldSelector("metadata.name=a\\,b\\=c,spec.nodeName!=x")).toEqual([
      { key: "metadata.name", op: "=", value: "a,b=c" },
      { key: "spec.nodeName", op: "!=", value: "x" },
    ]);
  });

  it.each(["spec.nodeName", "=x", "a=\\q"])("refuses %j", (selector) => {
    expect(() => parseFieldSelector(selector)).toThrow(SelectorError);
  });
});
