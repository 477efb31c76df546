import type PgTypes from "pg";
import { pg } from "../deps.js";

// Connection strings with several hosts, as libpq reads them (`postgres://h1:5432,h2:5433/app?target_session_attrs=
// read-write`), which is how self-managed HA (Patroni, pg_auto_failover) is reached. Hand-written because
// node-postgres parses URLs with `new URL`, which refuses a host list ("Invalid URL"), and picks no host by role.

/** What the chosen host must be, as libpq's `target_session_attrs`. */
export type SessionTarget = "any" | "read-write" | "read-only" | "primary" | "standby" | "prefer-standby";

const TARGETS: readonly SessionTarget[] = [
  "any",
  "read-write",
  "read-only",
  "primary",
  "standby",
  "prefer-standby",
];

/** One host of a list. */
export interface Host {
  readonly host: string;
  readonly port: number;
}

/** A multi-host connection string, split: its hosts in order, what they must be, and a URL of one host. */
export interface HostList {
  readonly hosts: readonly Host[];
  readonly target: SessionTarget;
  /** The connection string with only the first host and without `target_session_attrs`, for pg. */
  readonly url: string;
}

/**
 * Splits a connection string that names several hosts, or one with `target_session_attrs`; `undefined` for any
 * other (pg reads those itself). Throws a TypeError naming the problem for a value libpq would refuse.
 *
 * @example
 * parseHostList("postgres://app@db1:5432,db2:5433/shop?target_session_attrs=read-write");
 * // { hosts: [{ host: "db1", port: 5432 }, { host: "db2", port: 5433 }], target: "read-write", url: "postgres://app@db1:5432/shop" }
 */
export function parseHostList(connectionString: string): HostList | undefined {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/.exec(connectionString);
  if (!match) return undefined;
  const [, scheme = "", user = "", list = "", path = "", query = ""] = match;
  const params = new URLSearchParams(query.slice(1));
  const attrs = params.get("target_session_attrs");
  if (!list.includes(",") && attrs === null) return undefined;
  const target = (attrs ?? "any") as SessionTarget;
  if (!TARGETS.includes(target)) {
    throw new TypeError(
      `target_session_attrs: expected one of ${TARGETS.join(", ")}, got ${JSON.stringify(attrs)}`,
    );
  }
  const hosts = list.split(",").map((entry): Host => {
    const spec = /^(\[[^\]]+\]|[^:]*)(?::(\d+))?$/.exec(entry);
    if (!spec || spec[1] === "") {
      throw new TypeError(
        `the host list of the database URL has an empty or malformed host: ${JSON.stringify(entry)}`,
      );
    }
    return { host: (spec[1] ?? "").replace(/^\[|\]$/g, ""), port: Number(spec[2] ?? 5432) };
  });
  params.delete("target_session_attrs");
  const rest = params.toString();
  const first = hosts[0] as Host;
  const host = first.host.includes(":") ? `[${first.host}]` : first.host;
  return { hosts, target, url: `${scheme}${user}${host}:${first.port}${path}${rest ? `?${rest}` : ""}` };
}

/** A host's role, as the server reports it. */
interface Role {
  readonly recovery: boolean;
  readonly readOnly: boolean;
}

const matches = (target: SessionTarget, role: Role, relaxed: boolean): boolean => {
  switch (target) {
    case "read-write":
      return !role.readOnly;
    case "primary":
      return !role.recovery;
    case "read-only":
      return role.readOnly;
    case "standby":
      return role.recovery;
    case "prefer-standby":
      return role.recovery || relaxed;
    default:
      return true;
  }
};

/**
 * A `pg.Client` class that connects to the first host of `list` whose role matches its target, starting from the
 * last one that did: each new connection asks the server `pg_is_in_recovery()` and `transaction_read_only` and, on
 * a mismatch or a refused connection, tries the next host, so a pool finds a promoted standby by itself once the old
 * primary's connections are gone. `onSwitch` hears each change of host once.
 *
 * @example
 * const Client = hostListClient(parseHostList(url)!, (to) => log.warn({ to }, "database host switched"));
 * const pool = new pg.Pool({ Client, connectionString: parseHostList(url)!.url });
 */
export function hostListClient(list: HostList, onSwitch?: (to: string) => void): typeof PgTypes.Client {
  const Base = pg().Client;
  let current = 0;
  let announced = -1;
  const name = (i: number) => `${list.hosts[i]?.host}:${list.hosts[i]?.port}`;
  return class HostListClient extends Base {
    override connect(): Promise<PgTypes.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: PgTypes.Client) => void)): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, c: PgTypes.Client) => void),
    ): Promise<PgTypes.Client> | undefined {
      const done = this.connectToMatch();
      if (!callback) return done;
      const call = callback as (err: Error | null, c?: PgTypes.Client) => void;
      done.then(
        (c) => call(null, c),
        (error: Error) => call(error),
      );
      return undefined;
    }

    private async connectToMatch(): Promise<PgTypes.Client> {
      const failures: string[] = [];
      const n = list.hosts.length;
      const start = current;
      for (const relaxed of list.target === "prefer-standby" ? [false, true] : [false]) {
        for (let k = 0; k < n; k++) {
          const i = (start + k) % n;
          const host = list.hosts[i] as Host;
          const role = await probe(this, host).catch((error: Error) => {
            failures.push(`${name(i)}: ${error.message}`);
            return undefined;
          });
          const fits = role !== undefined && matches(list.target, role, relaxed);
          if (role !== undefined && !fits) {
            failures.push(
              `${name(i)}: ${role.recovery ? "a standby" : role.readOnly ? "read-only" : "a primary"}`,
            );
          }
          // The next connection starts past a host that did not fit: one that stopped answering (a lost VM) would
          // otherwise cost every new connection its connect timeout before the next host is tried.
          if (!fits) {
            if (current === i) current = (i + 1) % n;
            continue;
          }
          current = i;
          this.host = host.host;
          this.port = host.port;
          await super.connect();
          if (announced !== i && !(announced === -1 && i === 0)) onSwitch?.(name(i));
          announced = i;
          return this;
        }
      }
      throw new Error(
        `no database host is ${list.target === "any" ? "reachable" : `${list.target} (target_session_attrs)`}: ${failures.join("; ")}`,
      );
    }
  };

  // One short connection to read a host's role: the client being connected cannot try a second host once it has
  // tried one, so the role is read first. It costs one more connection only when a pool opens one.
  async function probe(client: object, host: Host): Promise<Role> {
    const own = client as unknown as {
      connectionParameters: PgTypes.ClientConfig;
      _connectionTimeoutMillis?: number;
    };
    const check = new Base({
      ...own.connectionParameters,
      host: host.host,
      port: host.port,
      connectionTimeoutMillis: own._connectionTimeoutMillis || 5000,
    });
    check.on("error", () => {});
    try {
      await check.connect();
      const { rows } = await check.query<{ recovery: boolean; read_only: string }>(
        "select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as read_only",
      );
      return { recovery: rows[0]?.recovery === true, readOnly: rows[0]?.read_only === "on" };
    } finally {
      await check.end().catch(() => {});
    }
  }
}
