// The dashboard's answers over HTTP, signed in, on the filled ledger: each request of the list, the detail, the body
// and the health charts timed from send to the last byte, one at a time, after a warm-up.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDashboard, createPool, ledgerContext, silentLogger } from "hookledger";
import { percentile } from "../lib/stats.js";
import { RARE_TYPE, type Targets, TYPES } from "./ledger.js";

/** One request kind and what its answer must show. */
interface Case {
  readonly name: string;
  /** The path under /dashboard/api/, or a function of the first page's cursor. */
  readonly path: string | ((cursor: string) => string);
  /** Answers with at least one event (false: the filter matches nothing, or not an events list). */
  readonly nonEmpty?: boolean;
}

/** One line of the table. */
export interface LatencyLine {
  readonly name: string;
  readonly path: string;
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  readonly problem: string | undefined;
}

/** The budget of issue 10 item 4. */
export const BUDGET_MS = 200;

function cases(t: Targets): Case[] {
  const q = (params: Record<string, string>) => `events?${new URLSearchParams(params)}`;
  const key = (e: { source: string; key: string }) => new URLSearchParams({ source: e.source, key: e.key });
  return [
    { name: "list: first page", path: "events", nonEmpty: true },
    { name: "list: page 50 (cursor)", path: (cursor) => q({ cursor }), nonEmpty: true },
    { name: "list: status=dead", path: q({ status: "dead" }), nonEmpty: true },
    { name: "list: troubled=1", path: q({ troubled: "1" }), nonEmpty: true },
    { name: "list: source=shopify", path: q({ source: "shopify" }), nonEmpty: true },
    { name: `list: type (common, ${TYPES[0]})`, path: q({ type: TYPES[0] as string }), nonEmpty: true },
    { name: "list: type (rare, 50 events)", path: q({ type: RARE_TYPE }), nonEmpty: true },
    { name: "list: type (matches none)", path: q({ type: "no.such.type" }) },
    { name: "list: entity", path: q({ entity: t.entity }), nonEmpty: true },
    { name: "list: since/until (a day 20 d ago)", path: q(t.oldDay), nonEmpty: true },
    { name: "search by id", path: q({ id: t.searchId }), nonEmpty: true },
    { name: "event: settled, entity history", path: `event?${key(t.settled)}` },
    { name: "event: dead, attempts + history", path: `event?${key(t.dead)}` },
    { name: "body download", path: `body?${key(t.settled)}` },
    { name: "health 1h", path: "health?window=1h" },
    { name: "health 24h", path: "health?window=24h" },
  ];
}

/**
 * Serves `createDashboard` on a node:http server over `schema`, signs in, and times each request kind `n` times
 * after `warmup` untimed requests.
 *
 * @example
 * const lines = await measureLatency(url, schema, targets, { n: 20, warmup: 3 });
 */
export async function measureLatency(
  url: string,
  schema: string,
  targets: Targets,
  options: { readonly n: number; readonly warmup: number },
): Promise<LatencyLine[]> {
  const token = randomBytes(16).toString("hex");
  // The pool `hookledger serve` mounts the dashboard with (dashboard/mount.ts): admin role, 4 connections.
  const db = createPool({ connectionString: url, role: "admin", max: 4 });
  const dashboard = createDashboard({
    db,
    ledger: ledgerContext(schema),
    users: [{ name: "bench", token }],
    log: silentLogger(),
  });
  const server: Server = createServer(dashboard.listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const cookie = await signIn(base, token);
    const get = async (path: string) => {
      const began = performance.now();
      const response = await fetch(`${base}/dashboard/api/${path}`, { headers: { cookie } });
      const body = Buffer.from(await response.arrayBuffer());
      return { ms: performance.now() - began, status: response.status, body };
    };
    // The cursor of page 50: 49 pages walked from the first.
    let cursor = "";
    for (let page = 1; page < 50; page++) {
      const answer = JSON.parse((await get(`events?${cursor && `cursor=${cursor}`}`)).body.toString());
      cursor = answer.next;
    }
    const lines: LatencyLine[] = [];
    for (const c of cases(targets)) {
      const path = typeof c.path === "string" ? c.path : c.path(cursor);
      const times: number[] = [];
      let problem: string | undefined;
      for (let i = 0; i < options.warmup + options.n; i++) {
        const answer = await get(path);
        if (answer.status !== 200)
          problem ??= `answered ${answer.status}: ${answer.body.toString().slice(0, 200)}`;
        else if (c.nonEmpty && JSON.parse(answer.body.toString()).events.length === 0)
          problem ??= "no events";
        if (i >= options.warmup) times.push(answer.ms);
      }
      lines.push({
        name: c.name,
        path,
        n: times.length,
        p50: percentile(times, 50),
        p95: percentile(times, 95),
        max: Math.max(...times),
        problem,
      });
    }
    return lines;
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await db.end();
  }
}

async function signIn(base: string, token: string): Promise<string> {
  const response = await fetch(`${base}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    body: new URLSearchParams({ token }),
    redirect: "manual",
  });
  const cookie = response.headers.get("set-cookie")?.split(";")[0];
  if (response.status !== 303 || !cookie) throw new Error(`sign-in answered ${response.status}`);
  return cookie;
}
