// hookledger/hono: the Hono handler (a separate entry, so apps without Hono never load its types). Hono's inline
// guard is the fetch one, `createFetchGuard` from "hookledger".
export { createHonoHandler, type HonoHandlerOptions } from "./adapters/hono/receiver.js";
