import type { HeaderBag } from "../providers/types.js";

/**
 * How many failed verifications one client address may make before it is answered 429 (docs/architecture.md §4).
 *
 * @example
 * createReceiver({ ...options, failureLimit: { maxFailures: 30, windowMs: 60_000 } });
 */
export interface FailureLimitOptions {
  /**
   * Failed verifications (bad signatures, stale timestamps, wrong replay tokens) answered 401 per address and
   * window; the ones after them are answered 429.
   * @defaultValue 30
   */
  readonly maxFailures?: number;
  /** @defaultValue 60_000 */
  readonly windowMs?: number;
  /**
   * Addresses remembered; the least recently failing go first, so memory stays bounded under any number of them.
   * @defaultValue 10_000
   */
  readonly maxAddresses?: number;
}

/** Counts failed verifications per client address. */
export interface FailureLimiter {
  /** Records a failure; returns the seconds to put in `Retry-After` when the address is over its limit. */
  fail(address: string, now: number): number | undefined;
  /** Without counting: the seconds to put in `Retry-After` while the address is over its limit, else `undefined`. */
  blocked(address: string, now: number): number | undefined;
}

/**
 * A fixed window per address in a bounded LRU (a `Map` re-inserted on use). Only failures are counted and only
 * failures are refused: a delivery that verifies is answered as usual from any address, so a provider that shares
 * an address (or a proxy) with an attacker loses nothing.
 *
 * @example
 * const limiter = failureLimiter({ maxFailures: 30 });
 * const retryAfter = limiter.fail("203.0.113.9", Date.now()); // undefined until the 31st failure in a minute
 */
export function failureLimiter(options: FailureLimitOptions = {}): FailureLimiter {
  const maxFailures = options.maxFailures ?? 30;
  const windowMs = options.windowMs ?? 60_000;
  const maxAddresses = options.maxAddresses ?? 10_000;
  const windows = new Map<string, { start: number; failures: number }>();
  return {
    fail(address, now) {
      let entry = windows.get(address);
      windows.delete(address);
      if (!entry || now - entry.start >= windowMs) entry = { start: now, failures: 0 };
      entry.failures++;
      windows.set(address, entry);
      if (windows.size > maxAddresses) {
        const oldest = windows.keys().next();
        if (!oldest.done) windows.delete(oldest.value);
      }
      return over(entry, now);
    },
    blocked(address, now) {
      const entry = windows.get(address);
      return entry && now - entry.start < windowMs ? over(entry, now) : undefined;
    },
  };

  function over(entry: { start: number; failures: number }, now: number): number | undefined {
    if (entry.failures <= maxFailures) return undefined;
    return Math.max(1, Math.ceil((entry.start + windowMs - now) / 1000));
  }
}

/**
 * The client address a failure is counted against: the socket's peer, or with `trustProxy` the last
 * `X-Forwarded-For` entry (the one the proxy in front appended; earlier entries are whatever the client wrote). IPv6
 * addresses count per /64, the block one subscriber usually holds; IPv4-mapped ones as IPv4.
 *
 * @example
 * clientKey("::ffff:203.0.113.9", headers, false); // "203.0.113.9"
 */
export function clientKey(
  socketAddress: string | undefined,
  headers: HeaderBag,
  trustProxy: boolean,
): string | undefined {
  let address = socketAddress;
  if (trustProxy) {
    const forwarded = headers.get("x-forwarded-for")?.split(",").at(-1)?.trim();
    if (forwarded) address = forwarded;
  }
  if (!address) return undefined;
  if (address.toLowerCase().startsWith("::ffff:") && address.includes(".")) return address.slice(7);
  if (!address.includes(":")) return address;
  return `${ipv6Groups(address).slice(0, 4).join(":")}::/64`;
}

/** The eight groups of an IPv6 address (a zone and an embedded IPv4 tail allowed), lower case, without zeros. */
function ipv6Groups(address: string): string[] {
  const bare = address.split("%")[0]?.toLowerCase() ?? "";
  const [head = "", tail] = bare.split("::", 2);
  const parts = (text: string) =>
    text
      .split(":")
      .filter((p) => p !== "")
      .flatMap((p) => {
        if (!p.includes(".")) return [p.replace(/^0+(?=.)/, "")];
        const [a = 0, b = 0, c = 0, d = 0] = p.split(".").map(Number);
        return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
      });
  const front = parts(head);
  const back = tail === undefined ? [] : parts(tail);
  return [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill("0"), ...back];
}
