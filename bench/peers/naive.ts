// The naive receiver, as most teams first write one (the "seed article" design): node:http, read the body, verify the
// Stripe signature with HMAC, JSON.parse, one `insert … on conflict do nothing` per request on a pg Pool of 20,
// answer 200. Its table (id, type, body jsonb, received_at) is created by the bench before it starts.
import pg from "pg";
import { required, servePeer } from "./http-peer.js";

const schema = required("BENCH_SCHEMA");
const pool = new pg.Pool({ connectionString: required("DATABASE_URL"), max: 20 });
pool.on("error", (error) => console.error(`idle client error: ${error.message}`));
const insert = `insert into ${schema}.webhook_events (id, type, body) values ($1, $2, $3) on conflict (id) do nothing`;

await servePeer(
  required("BENCH_STRIPE_SECRET"),
  async (body, res) => {
    const event = JSON.parse(body.toString("utf8")) as { id: string; type: string };
    await pool.query(insert, [event.id, event.type, event]);
    res.writeHead(200, { "content-type": "application/json" }).end('{"received":true}');
  },
  () => pool.end(),
);
