import { createHmac } from "node:crypto";

/**
 * Signs a body the way Stripe does (`t=…,v1=…`), for the demo sender and the benchmark. Tests use Stripe's own
 * library instead, to prove compatibility with code hookledger did not write.
 *
 * @example
 * headers["stripe-signature"] = stripeSignature(body, "whsec_…", Math.floor(Date.now() / 1000));
 */
export function stripeSignature(body: string, secret: string, timestampSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${timestampSeconds}.${body}`).digest("hex");
  return `t=${timestampSeconds},v1=${mac}`;
}

/**
 * Signs a body the way GitHub does (`sha256=…`).
 *
 * @example
 * headers["x-hub-signature-256"] = githubSignature(body, "secret");
 */
export function githubSignature(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}
