// The forwarding benches' destination: raw node:http answering at once with an empty body, in a process of its
// own. It counts requests and distinct `webhook-id`s (or `x-event-id`s, the fetch loop's) and reports them on
// "count"; its port goes to the bench on "ready". For the latency runs, "reset" may ask it to `record` each event's
// first 2xx time (ms since the epoch, by hookledger-event-id; reported on "arrivals") and name failing entities:
// the events of every `failEvery`-th entity (of `entities`, from the bench's `evt_w_<i>` ids) get 500 every time.
import { createServer } from "node:http";

let requests = 0;
const ids = new Set<string>();
let arrivals = new Map<string, number>();
let failEvery = 0;
let entities = 1;
let record = false;

const failing = (eventId: string | undefined): boolean => {
  if (failEvery === 0 || eventId === undefined) return false;
  const i = Number(eventId.slice(eventId.lastIndexOf("_") + 1));
  return (i % entities) % failEvery === 0;
};

const server = createServer((req, res) => {
  requests++;
  const eventId = req.headers["hookledger-event-id"];
  const event = typeof eventId === "string" ? eventId : undefined;
  const fail = failing(event);
  const id = req.headers["webhook-id"] ?? req.headers["x-event-id"];
  if (typeof id === "string" && !fail) ids.add(id);
  req.resume();
  req.on("end", () => {
    if (record && !fail && event !== undefined && !arrivals.has(event)) arrivals.set(event, Date.now());
    res.writeHead(fail ? 500 : 200, { "content-length": "0" });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.send?.({ phase: "ready", port: typeof address === "object" && address ? address.port : 0 });
});
process.on("message", (m: { cmd?: string; failEvery?: number; entities?: number; record?: boolean }) => {
  if (m.cmd === "count") process.send?.({ phase: "count", requests, distinct: ids.size });
  if (m.cmd === "arrivals") process.send?.({ phase: "arrivals", arrivals: [...arrivals] });
  if (m.cmd === "reset") {
    requests = 0;
    ids.clear();
    arrivals = new Map();
    failEvery = m.failEvery ?? 0;
    entities = m.entities ?? 1;
    record = m.record === true;
    process.send?.({ phase: "reset" });
  }
  if (m.cmd === "stop") server.close(() => process.disconnect?.());
});
