import assert from "node:assert/strict";
import { after, before } from "node:test";
import type { Pool } from "hookledger";
import type { NodeGuardedHandler } from "hookledger";
import { createInlineGuard, type InlineGuardOptions } from "hookledger";
import type { InlineGuard, InlineMode } from "hookledger";
import { silentLogger } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "./db.js";
import { NOW_S, postStripe, type Reply } from "./http.js";
import { inlineSources, serveInline } from "./inline.js";

/** An inline event's row, as the tests look at it. */
export interface InlineRow {
  readonly status: string;
  readonly outcome: string | null;
  readonly attempts: number;
  readonly last_error: string | null;
  /** The lease has run out (meaningful for an `inline` row only). */
  readonly lease_over: boolean;
}

/**
 * A fresh ledger for one test file (created in `before`, dropped in `after`) and the tools the inline tests share:
 * guards on the test sources, node:http servers closed at the end, signed Stripe deliveries, the event's row.
 */
export function inlineBed() {
  let t: TestLedger | undefined;
  let ingest: Pool | undefined;
  const closers: (() => Promise<void>)[] = [];
  before(async () => {
    t = await freshLedger();
    ingest = t.newPool("ingest");
  });
  after(async () => {
    for (const close of closers) await close();
    await t?.drop();
  });
  const ledger = (): TestLedger => {
    if (!t) throw new Error("inlineBed is used before its before() hook ran");
    return t;
  };

  const row = async (id: string): Promise<InlineRow | undefined> => {
    const { s } = ledger().ledger;
    const { rows } = await ledger().pool.query<InlineRow>(
      `select status, outcome, attempts, last_error, next_attempt_at <= now() as lease_over
         from ${s}.events where source = 'stripe' and dedupe_key = $1`,
      [id],
    );
    return rows[0];
  };

  return {
    get t(): TestLedger {
      return ledger();
    },
    /** Runs at the end of the file, before the ledger is dropped. */
    closeLater(close: () => Promise<void>): void {
      closers.push(close);
    },
    /** A guard on the test sources with the receiver tests' pinned clock; `mode` unset reads HOOKLEDGER_MODE. */
    guard(mode?: InlineMode, options: Partial<InlineGuardOptions> = {}): InlineGuard {
      return createInlineGuard({
        sources: inlineSources(),
        db: ingest as Pool,
        ledger: ledger().ledger,
        log: silentLogger(),
        now: () => NOW_S * 1000,
        ...(mode && { mode }),
        ...options,
      });
    },
    async start(
      guard: InlineGuard,
      handler: NodeGuardedHandler,
      options: Parameters<typeof serveInline>[2] = {},
    ) {
      const server = await serveInline(guard, handler, options);
      closers.push(() => server.close());
      return server;
    },
    /** A Stripe delivery of `payload`, signed again `ageS` seconds ago as a provider signs each retry. */
    post(url: string, payload: string, ageS = 0): Promise<Reply> {
      return postStripe(`${url}/webhooks/stripe`, payload, ageS);
    },
    /** Waits until the inline row has failed `attempts` times and waits for the provider's next delivery. */
    failed(id: string, attempts = 1): Promise<void> {
      return waitFor(
        `${id} to fail`,
        async () => {
          const found = await row(id);
          return found?.status === "inline" && found.attempts === attempts;
        },
        10_000,
      );
    },
    row,
    /** The row without its lease: a settled row keeps its last lease, which then means nothing. */
    async outcome(id: string) {
      const found = await row(id);
      if (!found) return undefined;
      const { lease_over: _, ...rest } = found;
      return rest;
    },
    settled(id: string): Promise<void> {
      return waitFor(`${id} to settle`, async () => (await row(id))?.status === "settled", 10_000);
    },
    assertDuplicate(reply: Reply, id: string): void {
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(JSON.parse(reply.text), { status: "duplicate", id });
    },
  };
}
