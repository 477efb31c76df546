// The floor of any verified answer: node:http, read the body, the same HMAC verification as the naive receiver, and
// nothing else (no parse, no database). The peer of hookledger's duplicate storm.
import { required, servePeer } from "./http-peer.js";

await servePeer(
  required("BENCH_STRIPE_SECRET"),
  (_body, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end('{"received":true}');
  },
  async () => {},
);
