import * as crypto from "node:crypto";

/** The raw body, or the fact that it crossed the cap. */
export type BodyRead = { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false };

/**
 * A body source that reads itself into one buffer under a cap, faster than its chunks one `await` at a time (the
 * node adapter's request body). It is still iterable, for callers that record the chunks.
 *
 * @example
 * const body: CappedBody = { readCapped: async (max) => ({ ok: true, bytes: new Uint8Array(0) }) };
 */
export interface CappedBody {
  /** The whole body, or `{ ok: false }` at the chunk that crosses `maxBytes` (reading stops there). */
  readCapped(maxBytes: number): Promise<BodyRead>;
}

const EMPTY: BodyRead = { ok: true, bytes: new Uint8Array(0) };

/**
 * Reads a body into one buffer, once, stopping at the byte that crosses `maxBytes` (the rest is never buffered).
 * The caller has already refused a Content-Length over the cap, so this only guards chunked or lying senders.
 *
 * @example
 * const read = await readCapped(request.body, 1_048_576);
 */
export function readCapped(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array> | CappedBody | null,
  maxBytes: number,
): Promise<BodyRead> {
  if (!chunks) return Promise.resolve(EMPTY);
  if (typeof (chunks as Partial<CappedBody>).readCapped === "function") {
    return (chunks as CappedBody).readCapped(maxBytes);
  }
  return readChunks(chunks as AsyncIterable<Uint8Array> | Iterable<Uint8Array>, maxBytes);
}

async function readChunks(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
): Promise<BodyRead> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > maxBytes) return { ok: false };
    parts.push(chunk);
  }
  return { ok: true, bytes: joined(parts, total) };
}

/**
 * The chunks as one buffer: the only chunk as it is, else one copy.
 *
 * @example
 * joined([Buffer.from("a"), Buffer.from("b")], 2); // <Buffer 61 62>
 */
export function joined(parts: readonly Uint8Array[], total: number): Uint8Array {
  return parts.length === 1 && parts[0] ? parts[0] : Buffer.concat(parts, total);
}

/**
 * The hex sha256 of a body, as the ledger and the confirmed-duplicate cache keep it. crypto.hash (Node 20.12 and
 * later) hashes in one call, without a Hash object per delivery.
 *
 * @example
 * bodySha256(Buffer.from("{}")); // "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
 */
export const bodySha256: (bytes: Uint8Array) => string =
  typeof crypto.hash === "function"
    ? (bytes) => crypto.hash("sha256", bytes, "hex")
    : (bytes) => crypto.createHash("sha256").update(bytes).digest("hex");
