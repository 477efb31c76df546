/** The raw body, or the fact that it crossed the cap. */
export type BodyRead = { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false };

/**
 * Reads a body into one buffer, once, stopping at the byte that crosses `maxBytes` (the rest is never buffered).
 * The caller has already refused a Content-Length over the cap, so this only guards chunked or lying senders.
 *
 * @example
 * const read = await readCapped(request.body, 1_048_576);
 */
export async function readCapped(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array> | null,
  maxBytes: number,
): Promise<BodyRead> {
  if (!chunks) return { ok: true, bytes: new Uint8Array(0) };
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > maxBytes) return { ok: false };
    parts.push(chunk);
  }
  if (parts.length === 1 && parts[0]) return { ok: true, bytes: parts[0] };
  return { ok: true, bytes: Buffer.concat(parts, total) };
}
