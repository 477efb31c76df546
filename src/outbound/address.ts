import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** An operator's rules on the dialled address, besides the link-local refusal: allowed and denied ranges. */
export interface AddressRules {
  readonly allow?: BlockList;
  readonly deny?: BlockList;
}

// Link-local addresses and the cloud metadata services on them (169.254.169.254 on AWS, GCP and Azure,
// fd00:ec2::254 on AWS's IPv6 IMDS): a destination that resolves there could read the host's credentials. Private
// ranges stay allowed: destinations come from the operator's own configuration (docs/outbox.md, "Senders").
const refused = new BlockList();
refused.addSubnet("169.254.0.0", 16, "ipv4");
refused.addSubnet("fe80::", 10, "ipv6");
refused.addAddress("fd00:ec2::254", "ipv6");

/** The eight 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail too), or undefined. */
function groups(address: string): number[] | undefined {
  let text = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const part = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const fill = 8 - left.length - right.length;
  if (fill < 0 || (tail === undefined && fill !== 0)) return undefined;
  return [...left, ...Array<number>(fill).fill(0), ...right];
}

/**
 * The IPv4 address an IPv6 address carries, in the spellings that reach an IPv4 host: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`) and NAT64 (`64:ff9b::/96`, RFC 6052).
 */
function embeddedIPv4(address: string): string | undefined {
  const g = groups(address);
  if (!g) return undefined;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  const mapped = zeros(5) && (g[5] === 0xffff || g[5] === 0);
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return undefined;
  const [hi = 0, lo = 0] = g.slice(6);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
}

/**
 * Why an address may not be dialled, or undefined when it may.
 *
 * @example
 * refusedAddress("::ffff:169.254.169.254"); // "169.254.169.254 is link-local (cloud metadata lives there)"
 */
export function refusedAddress(address: string, rules: AddressRules = {}): string | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const v4 = family === 4 ? address : embeddedIPv4(address);
  if (v4 !== undefined && refused.check(v4, "ipv4")) {
    return `${address} is link-local (cloud metadata lives there)`;
  }
  if (family === 6 && refused.check(address, "ipv6")) return `${address} is link-local or a metadata address`;
  // The ranges are checked against the address as dialled and against the IPv4 address it carries, so
  // `::ffff:10.0.0.1` is in "10.0.0.0/8" as 10.0.0.1 is.
  const within = (list: BlockList) =>
    list.check(address, family === 4 ? "ipv4" : "ipv6") || (v4 !== undefined && list.check(v4, "ipv4"));
  if (rules.deny && within(rules.deny)) return `${address} is in a denied range`;
  if (rules.allow && !within(rules.allow)) return `${address} is not in an allowed range`;
  return undefined;
}

/** The error a refused address fails the call with, before any packet is sent to it. */
export class RefusedAddressError extends Error {
  override readonly name = "RefusedAddressError";
}

/**
 * A `lookup` for `http.request` that resolves as usual and refuses the call when an address it would dial is
 * refused: the check is on the very addresses the socket connects to, after DNS, so a name that resolves to a
 * metadata address (or is re-pointed there) is caught. IP literals skip `lookup` in Node: check them with
 * {@link refusedAddress} before the request. `rules` adds an operator's allowed and denied ranges.
 *
 * @example
 * http.request(url, { lookup: guardedLookupFor({ deny }) });
 */
export function guardedLookupFor(rules: AddressRules): LookupFunction {
  return (hostname, options, callback) => lookupChecked(rules, hostname, options, callback);
}

function lookupChecked(
  rules: AddressRules,
  ...[hostname, options, callback]: Parameters<LookupFunction>
): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, "", 0);
    const bad = addresses.map((a) => refusedAddress(a.address, rules)).find((why) => why !== undefined);
    if (bad !== undefined) {
      return callback(new RefusedAddressError(`refused to connect to ${hostname}: ${bad}`), "", 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0];
    if (!first)
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
    callback(null, first.address, first.family);
  });
}
