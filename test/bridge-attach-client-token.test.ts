import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clientToken, SlotTokens } from "../src/ipam-whereabouts-bridge/attach/client-token.js";

const SLOT = { networkCardIndex: 0, deviceIndex: 1 };

describe("clientToken", () => {
  it('is "multus-ipmgr-" and the first 40 hex digits of sha256("instance/card/device/generation")', () => {
    // sha256("i-0123456789abcdef0/0/1/0") = 6801ed6f57fec7cfce4a239513665a5f5684e36c...
    expect(clientToken("i-0123456789abcdef0", SLOT, 0)).toBe(
      "multus-ipmgr-6801ed6f57fec7cfce4a239513665a5f5684e36c",
    );
  });

  it("is the same for the same slot and generation (a restarted bridge asks with it), at most 64 ASCII characters", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^i-[0-9a-f]{8,17}$/),
        fc.integer({ min: 0, max: 15 }),
        fc.integer({ min: 0, max: 31 }),
        fc.nat(),
        (instance, card, device, generation) => {
          const slot = { networkCardIndex: card, deviceIndex: device };
          const token = clientToken(instance, slot, generation);
          expect(token).toBe(clientToken(instance, { ...slot }, generation));
          expect(token).toMatch(/^multus-ipmgr-[0-9a-f]{40}$/);
          expect(token.length).toBeLessThanOrEqual(64);
        },
      ),
    );
  });

  it("differs between instances, cards, devices and generations", () => {
    const tokens = new Set([
      clientToken("i-0a1", SLOT, 0),
      clientToken("i-0a2", SLOT, 0),
      clientToken("i-0a1", { networkCardIndex: 1, deviceIndex: 1 }, 0),
      clientToken("i-0a1", { networkCardIndex: 0, deviceIndex: 2 }, 0),
      clientToken("i-0a1", SLOT, 1),
      // "1/1" + "1" and "1/11": the slashes keep the fields apart.
      clientToken("i-0a1", { networkCardIndex: 1, deviceIndex: 11 }, 1),
      clientToken("i-0a1", { networkCardIndex: 11, deviceIndex: 1 }, 1),
    ]);
    expect(tokens.size).toBe(7);
  });
});

describe("SlotTokens", () => {
  it("starts each slot at generation 0 and raises only that slot's when its ENI is deleted", () => {
    const tokens = new SlotTokens("i-0a1");
    const other = { networkCardIndex: 0, deviceIndex: 2 };
    expect(tokens.token(SLOT)).toBe(clientToken("i-0a1", SLOT, 0));
    tokens.deleted(SLOT);
    tokens.deleted(SLOT);
    expect(tokens.generation(SLOT)).toBe(2);
    expect(tokens.token(SLOT)).toBe(clientToken("i-0a1", SLOT, 2));
    expect(tokens.token(other)).toBe(clientToken("i-0a1", other, 0));
  });

  it("remembers the ENIs a slot's token answered that were never found", () => {
    const tokens = new SlotTokens("i-0a1");
    tokens.lost(SLOT, "eni-0a");
    expect(tokens.answeredLost(SLOT, "eni-0a")).toBe(true);
    expect(tokens.answeredLost(SLOT, "eni-0b")).toBe(false);
    expect(tokens.answeredLost({ networkCardIndex: 0, deviceIndex: 2 }, "eni-0a")).toBe(false);
  });

  it("raises a slot's generation when the ENI its token answered, once seen attached, is gone from EC2", () => {
    const tokens = new SlotTokens("i-0a1");
    tokens.answered(SLOT, "eni-0a");
    // Never seen attached: perhaps only not readable yet; the token stays.
    expect(tokens.goneUnlessIn(SLOT, new Set())).toBeUndefined();
    tokens.seenAttached(SLOT, "eni-0other");
    expect(tokens.goneUnlessIn(SLOT, new Set())).toBeUndefined();
    tokens.seenAttached(SLOT, "eni-0a");
    expect(tokens.goneUnlessIn(SLOT, new Set(["eni-0a"]))).toBeUndefined();
    expect(tokens.generation(SLOT)).toBe(0);
    expect(tokens.goneUnlessIn(SLOT, new Set())).toBe("eni-0a");
    expect(tokens.generation(SLOT)).toBe(1);
    expect(tokens.goneUnlessIn(SLOT, new Set())).toBeUndefined();
  });
});
