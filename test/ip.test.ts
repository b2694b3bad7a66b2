import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import { InvalidAddressError } from "../src/eni/errors/invalid-address-error.js";
import { InvalidCidrError } from "../src/eni/errors/invalid-cidr-error.js";
import {
  addressAtOffset,
  addressKind,
  addressOfValue,
  addressValue,
  anyCidrContains,
  awsReservedAddresses,
  canonical,
  canonicalCidr,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  compareAddresses,
  family,
  hasHostBits,
  offsetInCidr,
  parseCidr,
  tryCanonical,
} from "../src/eni/ip.js";

describe("canonical", () => {
  it.each([
    ["IPv4 stays as it is", "192.0.2.10", "192.0.2.10"],
    ["IPv4 zero octets are kept", "192.0.2.0", "192.0.2.0"],
    ["IPv6 uppercase is lowercased", "2001:DB8::A", "2001:db8::a"],
    ["IPv6 expanded form is compressed", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["IPv6 leading zeros in a group are dropped", "2001:0db8::000a", "2001:db8::a"],
    ["IPv6 longest zero run is compressed, not the first", "2001:db8:0:0:1:0:0:0", "2001:db8:0:0:1::"],
    ["IPv6 equal zero runs: the first is compressed", "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["IPv6 a single zero group is not compressed", "2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
    ["IPv6 unspecified", "0:0:0:0:0:0:0:0", "::"],
    ["IPv6 loopback", "0:0:0:0:0:0:0:1", "::1"],
    ["IPv6 with a dotted IPv4 tail becomes hex", "2001:db8::198.51.100.7", "2001:db8::c633:6407"],
    [
      "IPv4-mapped IPv6 keeps dotted notation (RFC 5952 section 5)",
      "::ffff:c633:6407",
      "::ffff:198.51.100.7",
    ],
    ["IPv4-mapped IPv6 in dotted form stays dotted", "::FFFF:198.51.100.7", "::ffff:198.51.100.7"],
    ["deprecated IPv4-compatible ::a.b.c.d is not turned into IPv4-mapped", "::198.51.100.7", "::c633:6407"],
  ])("%s: %s -> %s", (_name, input, expected) => {
    expect(canonical(input)).toBe(expected);
  });

  it.each([
    ["two-part IPv4 short form", "10.1"],
    ["three-part IPv4 short form", "192.0.2"],
    ["single-number IPv4", "3221225994"],
    ["hex IPv4 octet", "0x7f.0.0.1"],
    ["hex-and-short IPv4", "0x7f.1"],
    ["octal-looking IPv4 octet with leading zero", "010.0.2.1"],
    ["leading zero in the last IPv4 octet", "192.0.2.01"],
    ["IPv4 octet over 255", "192.0.2.256"],
    ["five IPv4 octets", "192.0.2.1.5"],
    ["IPv4 with a prefix", "192.0.2.1/24"],
    ["surrounding whitespace", " 192.0.2.1"],
    ["empty string", ""],
    ["IPv6 zone id", "fe80::1%eth0"],
    ["IPv6 numeric zone id", "fe80::1%2"],
    ["IPv6 group with five hex digits", "2001:0db80::1"],
    ["IPv6 with two double colons", "2001:db8::1::2"],
    ["IPv6 with nine groups", "1:2:3:4:5:6:7:8:9"],
    ["IPv6 with triple colon", ":::"],
    ["IPv6 with non-hex letter", "2001:db8::g"],
    ["IPv6 with a short dotted tail", "::ffff:198.51.100"],
    ["IPv6 with a hex dotted tail", "::ffff:0xc6.51.100.7"],
    ["IPv6 with too many groups before a dotted tail", "1:2:3:4:5:6:7:198.51.100.7"],
    ["IPv6 in brackets", "[2001:db8::1]"],
    ["a hostname", "localhost"],
  ])("rejects %s: %j", (_name, input) => {
    expect(() => canonical(input)).toThrow(InvalidAddressError);
    expect(tryCanonical(input)).toBeUndefined();
  });

  it("InvalidAddressError names the value and what is expected, with the config exit code", () => {
    const error = (() => {
      try {
        canonical("10.1");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidAddressError);
    const e = error as InvalidAddressError;
    expect(e.name).toBe("InvalidAddressError");
    expect(e.value).toBe("10.1");
    expect(e.exitCode).toBe(ExitCode.config);
    expect(e.message).toBe(
      '"10.1" is not a valid IP address: expected an IPv4 address in four decimal octets (e.g. 192.0.2.10) ' +
        "or an IPv6 address without a zone id (e.g. 2001:db8::10)",
    );
  });

  it("a zone id is rejected with a message that says so", () => {
    expect(() => canonical("fe80::1%eth0")).toThrow(
      '"fe80::1%eth0" is not a valid IP address: expected an IPv6 address without a zone id ' +
        "(the part from % on is not part of the address)",
    );
  });

  it("tryCanonical returns the canonical form of a valid address", () => {
    expect(tryCanonical("2001:DB8::0:1")).toBe("2001:db8::1");
  });

  it.each([
    ["192.0.2.1", 4],
    ["2001:db8::1", 6],
    ["::ffff:192.0.2.1", 6],
  ] as const)("family(%s) is %i", (address, expected) => {
    expect(family(address)).toBe(expected);
  });
});

describe("parseCidr and canonicalCidr", () => {
  it.each([
    ["IPv4 network", "198.51.100.0/24", { network: "198.51.100.0", prefix: 24, family: 4 }],
    [
      "IPv4 with host bits is masked to its network",
      "198.51.100.7/24",
      { network: "198.51.100.0", prefix: 24, family: 4 },
    ],
    ["IPv4 /32", "198.51.100.7/32", { network: "198.51.100.7", prefix: 32, family: 4 }],
    ["IPv4 /0", "198.51.100.7/0", { network: "0.0.0.0", prefix: 0, family: 4 }],
    ["IPv6 uppercase with host bits", "2001:DB8::1/64", { network: "2001:db8::", prefix: 64, family: 6 }],
    [
      "IPv6 expanded",
      "2001:0db8:0000:0001:0000:0000:0000:0000/64",
      { network: "2001:db8:0:1::", prefix: 64, family: 6 },
    ],
    ["IPv6 /128", "2001:db8::5/128", { network: "2001:db8::5", prefix: 128, family: 6 }],
    ["IPv6 /0", "2001:db8::5/0", { network: "::", prefix: 0, family: 6 }],
    [
      "IPv6 odd prefix masks inside a group",
      "2001:db8:abcd::/35",
      { network: "2001:db8:a000::", prefix: 35, family: 6 },
    ],
  ] as const)("%s: %s", (_name, input, expected) => {
    expect(parseCidr(input)).toEqual(expected);
  });

  it.each([
    ["198.51.100.7/24", "198.51.100.0/24"],
    ["2001:DB8:0::1/64", "2001:db8::/64"],
    ["2001:db8::/48", "2001:db8::/48"],
  ])("canonicalCidr(%s) is %s", (input, expected) => {
    expect(canonicalCidr(input)).toBe(expected);
  });

  it.each([
    ["no prefix", "198.51.100.0"],
    ["empty prefix", "198.51.100.0/"],
    ["IPv4 prefix over 32", "198.51.100.0/33"],
    ["IPv6 prefix over 128", "2001:db8::/129"],
    ["negative prefix", "198.51.100.0/-1"],
    ["prefix with a leading zero", "198.51.100.0/024"],
    ["prefix with a plus sign", "198.51.100.0/+24"],
    ["prefix as a netmask", "198.51.100.0/255.255.255.0"],
    ["two slashes", "198.51.100.0/24/24"],
    ["loose IPv4 address", "10.1/16"],
    ["IPv6 zone id", "fe80::%eth0/64"],
    ["empty", ""],
  ])("rejects %s: %j", (_name, input) => {
    expect(() => parseCidr(input)).toThrow(InvalidCidrError);
  });

  it.each([
    ["198.51.100.33/27", true],
    ["198.51.100.32/27", false],
    ["198.51.100.7/32", false],
    ["0.0.0.0/0", false],
    ["0.0.0.1/0", true],
    ["2001:db8::1/64", true],
    ["2001:DB8:0::/64", false],
  ])("hasHostBits(%s) is %s", (input, expected) => {
    expect(hasHostBits(input)).toBe(expected);
  });

  it("InvalidCidrError names the value and the allowed prefix range", () => {
    expect(() => parseCidr("2001:db8::/129")).toThrow(
      '"2001:db8::/129" is not a valid CIDR block: expected a prefix length from 0 to 128 after the slash',
    );
    try {
      parseCidr("x/1");
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidCidrError);
      expect((e as InvalidCidrError).value).toBe("x/1");
      expect((e as InvalidCidrError).exitCode).toBe(ExitCode.config);
    }
  });
});

describe("cidrContains, anyCidrContains, cidrsOverlap", () => {
  it.each([
    ["first address of an IPv4 block", "198.51.100.0/26", "198.51.100.0", true],
    ["last address of an IPv4 block", "198.51.100.0/26", "198.51.100.63", true],
    ["one past the end of an IPv4 block", "198.51.100.0/26", "198.51.100.64", false],
    ["IPv4 /32 holds only itself", "198.51.100.7/32", "198.51.100.7", true],
    ["IPv4 /0 holds everything IPv4", "0.0.0.0/0", "203.0.113.9", true],
    ["IPv4 block never holds an IPv6 address", "0.0.0.0/0", "2001:db8::1", false],
    ["IPv6 block never holds an IPv4 address", "::/0", "198.51.100.1", false],
    [
      "IPv4 block does not hold the IPv4-mapped form of its address",
      "198.51.100.0/24",
      "::ffff:198.51.100.7",
      false,
    ],
    ["IPv6 expanded address in a compressed block", "2001:db8:1::/64", "2001:0db8:0001:0000::0005", true],
    ["IPv6 address in the next /64", "2001:db8:1::/64", "2001:db8:1:1::5", false],
    ["CIDR with host bits is read as its network", "198.51.100.7/24", "198.51.100.200", true],
  ] as const)("%s: %s contains %s is %s", (_name, cidr, address, expected) => {
    expect(cidrContains(cidr, address)).toBe(expected);
  });

  it("anyCidrContains: true when one block of either family holds it, false for an empty list", () => {
    expect(anyCidrContains(["198.51.100.0/25", "2001:db8::/48"], "2001:db8:0:7::1")).toBe(true);
    expect(anyCidrContains(["198.51.100.0/25", "2001:db8::/48"], "198.51.100.200")).toBe(false);
    expect(anyCidrContains([], "198.51.100.1")).toBe(false);
  });

  it.each([
    ["identical blocks", "198.51.100.0/24", "198.51.100.0/24", true],
    ["a block and one inside it", "198.51.100.0/24", "198.51.100.64/26", true],
    ["the inner block first", "198.51.100.64/26", "198.51.100.0/24", true],
    ["adjacent blocks", "198.51.100.0/25", "198.51.100.128/25", false],
    ["IPv6 /48 and a /64 inside", "2001:db8::/48", "2001:db8:0:ff::/64", true],
    ["IPv6 /48 and a /64 outside", "2001:db8::/48", "2001:db8:1::/64", false],
    ["different families never overlap", "0.0.0.0/0", "::/0", false],
  ] as const)("cidrsOverlap: %s (%s, %s) is %s", (_name, a, b, expected) => {
    expect(cidrsOverlap(a, b)).toBe(expected);
  });
});

describe("addressKind", () => {
  it.each([
    ["198.51.100.7", "unicast"],
    ["2001:db8::7", "unicast"],
    ["169.254.0.1", "link-local"],
    ["169.254.255.255", "link-local"],
    ["169.255.0.1", "unicast"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.255", "multicast"],
    ["240.0.0.1", "unicast"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "unicast"],
    ["::1", "loopback"],
    ["ff02::1", "multicast"],
    ["::", "unspecified"],
    ["::ffff:198.51.100.7", "ipv4-mapped"],
    ["::ffff:c633:6407", "ipv4-mapped"],
  ] as const)("%s is %s", (address, expected) => {
    expect(addressKind(address)).toBe(expected);
  });
});

describe("offsets and sizes", () => {
  it.each([
    ["198.51.100.0/24", 256n],
    ["198.51.100.7/32", 1n],
    ["2001:db8::/64", 18446744073709551616n],
    ["2001:db8::/65", 9223372036854775808n],
    ["::/0", 1n << 128n],
  ])("cidrSize(%s) is %s", (cidr, expected) => {
    expect(cidrSize(cidr)).toBe(expected);
  });

  it.each([
    ["198.51.100.0/24", "198.51.100.0", 0n],
    ["198.51.100.0/24", "198.51.100.255", 255n],
    ["198.51.100.64/26", "198.51.100.80", 16n],
    ["2001:db8::/64", "2001:db8::1:0", 65536n],
    ["2001:db8::/64", "2001:db8::ffff:ffff:ffff:ffff", 18446744073709551615n],
  ] as const)("offsetInCidr(%s, %s) is %s and addressAtOffset inverts it", (cidr, address, offset) => {
    expect(offsetInCidr(cidr, address)).toBe(offset);
    expect(addressAtOffset(cidr, offset)).toBe(address);
  });

  it("offsetInCidr of an address outside the block throws RangeError", () => {
    expect(() => offsetInCidr("198.51.100.0/26", "198.51.100.64")).toThrow(RangeError);
    expect(() => offsetInCidr("198.51.100.0/26", "2001:db8::1")).toThrow(RangeError);
  });

  it("addressAtOffset outside the block throws RangeError naming the size", () => {
    expect(() => addressAtOffset("198.51.100.0/26", 64n)).toThrow(
      "offset 64 is outside 198.51.100.0/26, which holds 64 addresses",
    );
    expect(() => addressAtOffset("198.51.100.0/26", -1n)).toThrow(RangeError);
  });

  it("addressAtOffset of a CIDR with host bits counts from the network", () => {
    expect(addressAtOffset("198.51.100.7/24", 5n)).toBe("198.51.100.5");
  });
});

describe("awsReservedAddresses", () => {
  it.each([
    [
      "IPv4 /24: first four and last",
      "198.51.100.0/24",
      ["198.51.100.0", "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.255"],
    ],
    [
      "IPv4 /28, the smallest AWS subnet",
      "198.51.100.16/28",
      ["198.51.100.16", "198.51.100.17", "198.51.100.18", "198.51.100.19", "198.51.100.31"],
    ],
    [
      "IPv4 CIDR written with host bits",
      "198.51.100.20/28",
      ["198.51.100.16", "198.51.100.17", "198.51.100.18", "198.51.100.19", "198.51.100.31"],
    ],
    [
      "IPv6 /64: first four and last too",
      "2001:db8:0:1::/64",
      [
        "2001:db8:0:1::",
        "2001:db8:0:1::1",
        "2001:db8:0:1::2",
        "2001:db8:0:1::3",
        "2001:db8:0:1:ffff:ffff:ffff:ffff",
      ],
    ],
    ["IPv4 /31 has only two addresses, listed once", "198.51.100.0/31", ["198.51.100.0", "198.51.100.1"]],
    ["IPv4 /32 is all reserved", "198.51.100.7/32", ["198.51.100.7"]],
  ])("%s: %s", (_name, cidr, expected) => {
    expect(awsReservedAddresses(cidr)).toEqual(expected);
  });

  it("answers the same list again (kept by subnet) however the caller changed the one it got", () => {
    const first = awsReservedAddresses("198.51.100.0/24");
    first.push("198.51.100.77");
    first.reverse();
    expect(awsReservedAddresses("198.51.100.0/24")).toEqual([
      "198.51.100.0",
      "198.51.100.1",
      "198.51.100.2",
      "198.51.100.3",
      "198.51.100.255",
    ]);
  });

  it("rejects a subnet that is no CIDR every time", () => {
    expect(() => awsReservedAddresses("198.51.100.0")).toThrow(InvalidCidrError);
    expect(() => awsReservedAddresses("198.51.100.0")).toThrow(InvalidCidrError);
  });
});

describe("compareAddresses", () => {
  it("sorts IPv4 before IPv6, then numerically, not as text", () => {
    const sorted = ["2001:db8::10", "198.51.100.10", "2001:db8::9", "198.51.100.9", "192.0.2.200"].sort(
      compareAddresses,
    );
    expect(sorted).toEqual(["192.0.2.200", "198.51.100.9", "198.51.100.10", "2001:db8::9", "2001:db8::10"]);
  });

  it("equal addresses in different spellings compare equal", () => {
    expect(compareAddresses("2001:DB8::1", "2001:db8:0:0::1")).toBe(0);
  });

  it("rejects invalid input", () => {
    expect(() => compareAddresses("10.1", "198.51.100.1")).toThrow(InvalidAddressError);
  });
});

describe("parsing the same text again (parsed addresses are kept by their text)", () => {
  const v6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).map((v) => addressOfValue(6, v));
  const v4 = fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }).map((v) => addressOfValue(4, v));
  const spelling = fc.oneof(
    v4,
    v6,
    v6.map((a) => a.toUpperCase()),
    fc.string({ maxLength: 12 }),
  );
  const answers = (text: string) => [
    tryCanonical(text),
    tryCanonical(text) === undefined ? undefined : addressValue(text),
    tryCanonical(text) === undefined ? undefined : family(text),
  ];

  it("answers as the first time, also after more than 10,000 other texts emptied what was kept", () => {
    fc.assert(
      fc.property(fc.array(spelling, { minLength: 1, maxLength: 40 }), (texts) => {
        const first = texts.map(answers);
        expect(texts.map(answers)).toEqual(first);
        for (let i = 0; i < 10_001; i++) tryCanonical(`2001:db8::${i.toString(16)}:1`);
        expect(texts.map(answers)).toEqual(first);
      }),
      { numRuns: 5 },
    );
  });

  it("keeps the text that is no address none, and a rejected text stays rejected with its error", () => {
    expect(tryCanonical("10.1")).toBeUndefined();
    expect(tryCanonical("10.1")).toBeUndefined();
    expect(() => compareAddresses("10.1", "198.51.100.1")).toThrow(InvalidAddressError);
    expect(() => compareAddresses("10.1", "198.51.100.1")).toThrow(InvalidAddressError);
  });
});
