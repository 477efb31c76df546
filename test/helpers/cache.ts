import { createReceiver, type ReceiverOptions } from "hookledger";
import type { LedgerContext, Queryable } from "../../src/ledger/context.js";
import { silentLogger } from "hookledger";
import { stripeProvider } from "hookledger";
import { NOW_S, STRIPE_CAP, STRIPE_SECRETS, send, serve, stripeBody, stripeHeaders } from "./http.js";

/** A real pool that counts the queries sent through it. */
export function counting(db: Queryable): Queryable & { readonly count: number } {
  let count = 0;
  return {
    get count() {
      return count;
    },
    query: ((...args: Parameters<Queryable["query"]>) => {
      count++;
      return db.query(...args);
    }) as Queryable["query"],
  };
}

/**
 * POSTs one signed Stripe event (`payload`, by default `stripeBody(id)`) to a receiver built with `options` (its
 * cache, its pool) and closes it.
 */
export async function postOnce(
  ledger: LedgerContext,
  options: Partial<ReceiverOptions> & Pick<ReceiverOptions, "db">,
  id: string,
  payload = stripeBody(id),
) {
  const server = await serve(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      ledger,
      log: silentLogger(),
      now: () => NOW_S * 1000,
      ...options,
    }),
  );
  try {
    const reply = await send(`${server.url}/webhooks/stripe`, {
      headers: stripeHeaders(payload),
      body: payload,
    });
    return {
      status: reply.status,
      headers: reply.headers,
      ms: reply.ms,
      body: reply.text === "" ? undefined : JSON.parse(reply.text),
    };
  } finally {
    await server.close();
  }
}
