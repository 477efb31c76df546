/**
 * An open-addressing index from a 32-bit hash to the slot numbers of a typed-array store (linear probing, at most
 * half full, -1 for an empty cell), shared by the confirmed-duplicate cache (`src/cache/memory.ts`) and the known
 * bodies (`known-bodies.ts`). Each store probes it with its own comparison; removal is the part they share.
 *
 * @example
 * const index = slotIndex(100_000); // index.cells.length === 262_144
 */
export interface SlotIndex {
  readonly cells: Int32Array;
  readonly mask: number;
}

/**
 * An empty index for up to `max` slots.
 *
 * @example
 * const { cells, mask } = slotIndex(1_000);
 */
export function slotIndex(max: number): SlotIndex {
  const cells = new Int32Array(2 ** Math.ceil(Math.log2(max * 2 + 1))).fill(-1);
  return { cells, mask: cells.length - 1 };
}

/**
 * Empties the cell of `slot` and moves later cells of its run back (backward-shift deletion), so every probe that
 * starts at its hash's home cell still finds its slot with no tombstones left behind.
 *
 * @example
 * removeSlot(index, slot, (s) => hashes[s] as number);
 */
export function removeSlot(index: SlotIndex, slot: number, hashOf: (slot: number) => number): void {
  const { cells, mask } = index;
  let cell = hashOf(slot) & mask;
  while (cells[cell] !== slot) cell = (cell + 1) & mask;
  for (let next = (cell + 1) & mask; cells[next] !== -1; next = (next + 1) & mask) {
    const home = hashOf(cells[next] as number) & mask;
    // A slot whose home lies cyclically in (cell, next] is still reachable from there; any other moves back.
    if (cell <= next ? cell < home && home <= next : cell < home || home <= next) continue;
    cells[cell] = cells[next] as number;
    cell = next;
  }
  cells[cell] = -1;
}
