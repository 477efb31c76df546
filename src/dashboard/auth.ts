import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** A person who may sign in to the dashboard. */
export interface DashboardUser {
  readonly name: string;
  readonly token: string;
}

/** Who a request comes from, once its session cookie checked out. */
export interface Session {
  readonly user: string;
  /** The value the page sends back in `x-hookledger-csrf` with every action. */
  readonly csrf: string;
}

/** The session cookie's name; its path is `/dashboard`. */
export const SESSION_COOKIE = "hookledger_session";
/** The header every state-changing request carries (see {@link Session.csrf}). */
export const CSRF_HEADER = "x-hookledger-csrf";
const SESSION_MS = 12 * 3_600_000;

/**
 * Sign-in and sessions. A session is a cookie `name.expiry.mac` whose MAC is keyed by the user's own token, so any
 * instance configured with the same tokens accepts it (no session store) and changing a token signs its user out
 * everywhere. The CSRF value is a MAC of the cookie: a page on another site can neither read it nor send the cookie
 * (SameSite=Strict), and an action without it is refused.
 *
 * @example
 * const auth = dashboardAuth(users);
 * const user = auth.signIn(token); // the user's name, or undefined
 * const cookie = user && auth.cookieFor(user);
 */
export function dashboardAuth(users: readonly DashboardUser[]) {
  const keys = new Map(users.map((u) => [u.name, sessionKey(u.token)]));
  const digests = users.map((u) => ({ name: u.name, digest: sha256(u.token) }));
  const mac = (key: Buffer, text: string) => createHmac("sha256", key).update(text).digest("base64url");

  return {
    /** The name of the user whose token this is. Every token is compared, in constant time, as equal-length digests. */
    signIn(token: string): string | undefined {
      const given = sha256(token);
      let found: string | undefined;
      for (const { name, digest } of digests) if (timingSafeEqual(given, digest)) found ??= name;
      return found;
    },
    /** A `Set-Cookie` value that signs `user` in for 12 hours; `secure` when the browser came over HTTPS. */
    cookieFor(user: string, secure = false, now = Date.now()): string {
      const key = keys.get(user);
      if (!key) throw new Error(`no dashboard user named ${user}`);
      const value = `${Buffer.from(user).toString("base64url")}.${now + SESSION_MS}`;
      const attributes = `Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MS / 1000}`;
      return `${SESSION_COOKIE}=${value}.${mac(key, value)}; ${attributes}${secure ? "; Secure" : ""}`;
    },
    /** The session of a request's `Cookie` header, or `undefined` when it has none that checks out. */
    session(cookieHeader: string | undefined, now = Date.now()): Session | undefined {
      const value = cookieValue(cookieHeader, SESSION_COOKIE);
      const parts = value?.split(".");
      if (!value || parts?.length !== 3) return undefined;
      const [encodedUser, expires, given] = parts as [string, string, string];
      const user = Buffer.from(encodedUser, "base64url").toString();
      const key = keys.get(user);
      if (!key || !/^\d{1,15}$/.test(expires) || Number(expires) <= now) return undefined;
      const expected = Buffer.from(mac(key, `${encodedUser}.${expires}`));
      const actual = Buffer.from(given);
      if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return undefined;
      return { user, csrf: mac(key, `csrf.${value}`) };
    },
    /** Whether a request's CSRF header matches its session. */
    csrfMatches(session: Session, header: string | undefined): boolean {
      if (header === undefined) return false;
      const expected = Buffer.from(session.csrf);
      const actual = Buffer.from(header);
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
  };
}

/** What {@link dashboardAuth} returns. */
export type DashboardAuth = ReturnType<typeof dashboardAuth>;

/** A `Set-Cookie` value that ends the session. */
export const SIGNED_OUT = `${SESSION_COOKIE}=; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=0`;

/**
 * A fresh random token for the demo's local login link (192 bits, URL-safe).
 *
 * @example
 * const demo = { name: "demo", token: demoToken() };
 */
export function demoToken(): string {
  return randomBytes(24).toString("base64url");
}

function sessionKey(token: string): Buffer {
  return createHash("sha256").update("hookledger dashboard session\0").update(token).digest();
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
