// Stripe's signature check as a team writes it by hand (the "seed article" receiver and the HMAC floor): HMAC-SHA256
// over `{t}.{raw body}`, compared in constant time with every v1 in the header, the timestamp within 300 s.
import { createHmac, timingSafeEqual } from "node:crypto";

const TOLERANCE_SECONDS = 300;

/**
 * Whether `header` (`Stripe-Signature: t=…,v1=…`) signs `body` with `secret`, and is recent enough.
 *
 * @example
 * if (!verifyStripe(body, req.headers["stripe-signature"], secret)) return reply(400);
 */
export function verifyStripe(body: Buffer, header: string | string[] | undefined, secret: string): boolean {
  if (typeof header !== "string") return false;
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    const key = part.slice(0, eq);
    if (key === "t") timestamp = part.slice(eq + 1);
    else if (key === "v1") signatures.push(part.slice(eq + 1));
  }
  if (timestamp === undefined || signatures.length === 0) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest();
  return signatures.some((hex) => {
    const given = Buffer.from(hex, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
