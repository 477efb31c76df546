// The forwarding benches' destination: raw node:http answering 200 with an empty body at once, in a process of its
// own. It counts requests and distinct `webhook-id`s (or `x-event-id`s, the fetch loop's) and reports them on
// "count"; its port goes to the bench on "ready".
import { createServer } from "node:http";

let requests = 0;
const ids = new Set<string>();
const server = createServer((req, res) => {
  requests++;
  const id = req.headers["webhook-id"] ?? req.headers["x-event-id"];
  if (typeof id === "string") ids.add(id);
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-length": "0" });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.send?.({ phase: "ready", port: typeof address === "object" && address ? address.port : 0 });
});
process.on("message", (m: { cmd?: string }) => {
  if (m.cmd === "count") process.send?.({ phase: "count", requests, distinct: ids.size });
  if (m.cmd === "reset") {
    requests = 0;
    ids.clear();
    process.send?.({ phase: "reset" });
  }
  if (m.cmd === "stop") server.close(() => process.disconnect?.());
});
