// The forwarding benches' simplest peer, as a user would write a relay: read claimed events' bodies from the
// ledger 256 at a time, POST each with fetch under a concurrency limit (BENCH_FORWARD_CONCURRENCY), mark the batch
// sent in a table of its own. No signing, no retries beyond "not marked, read again", no per-entity order.
// BENCH_CEILING=1: the destination's ceiling instead: the same bodies from memory, no database, POSTed under the same
// limit by node:http on a keep-alive agent (cheaper per request than fetch, so the ceiling is the destination's).
import { Agent, request } from "node:http";
import { createHookledger } from "hookledger";
import pg from "pg";
import { claimBacklog } from "../lib/worker-ledger.js";
import { required } from "./http-peer.js";

const schema = required("BENCH_SCHEMA");
const url = required("BENCH_FORWARD_URL");
const limit = Number(required("BENCH_FORWARD_CONCURRENCY"));
const ceiling = process.env.BENCH_CEILING === "1";

interface Message {
  key: string;
  body: Buffer;
}

async function fetchPost(m: Message): Promise<number> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-event-id": m.key },
    body: new Uint8Array(m.body),
  });
  await answer.arrayBuffer();
  return answer.status;
}

const agent = new Agent({ keepAlive: true, maxSockets: limit });
function httpPost(m: Message): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "x-event-id": m.key, "content-length": m.body.length },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.end(m.body);
  });
}

async function postAll(batch: Message[]): Promise<void> {
  const post = ceiling ? httpPost : fetchPost;
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < batch.length; i = next++) {
      const status = await post(batch[i] as Message);
      if (status < 200 || status >= 300) throw new Error(`destination answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, batch.length) }, lane));
}

async function main(): Promise<void> {
  const connectionString = required("DATABASE_URL");
  const hl = createHookledger({
    connectionString,
    schema,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_fetch_loop"] }],
  });
  await hl.migrate();
  await hl.close();
  await claimBacklog({
    connectionString,
    schema,
    events: Number(required("BENCH_EVENTS")),
    entities: Number(required("BENCH_ENTITIES")),
    bodyBytes: Number(required("BENCH_BODY_BYTES")),
  });
  const db = new pg.Client({ connectionString });
  await db.connect();
  await db.query(`create table ${schema}.relayed (dedupe_key text primary key)`);
  const read = `select e.dedupe_key as key, b.body from ${schema}.events e
    join ${schema}.event_bodies b on b.source = e.source and b.dedupe_key = e.dedupe_key
    where not exists (select 1 from ${schema}.relayed r where r.dedupe_key = e.dedupe_key)
    limit 256`;
  const all = ceiling ? (await db.query<Message>(read.replace("limit 256", ""))).rows : [];
  process.send?.({ phase: "ready" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  // Listening before the work: the bench may say stop as soon as the destination holds every event.
  const stop = new Promise<void>((resolve) => process.once("message", () => resolve()));
  process.send?.({ phase: "started" });
  if (ceiling) {
    await postAll(all);
  } else {
    for (;;) {
      const { rows } = await db.query<Message>(read);
      if (rows.length === 0) break;
      await postAll(rows);
      await db.query(`insert into ${schema}.relayed select unnest($1::text[])`, [rows.map((r) => r.key)]);
    }
  }
  process.send?.({ phase: "done" });
  await stop;
  await db.end();
  process.disconnect?.();
}

main().catch((error: Error) => {
  console.error("fetch loop peer failed:", error);
  process.send?.({ phase: "error", error: error.message });
  process.exitCode = 1;
});
