// hookledger/hono: the Hono handler and inline guard (a separate entry, so apps without Hono never load its types).
export { createHonoHandler, type HonoHandlerOptions } from "./adapters/hono/receiver.js";
export { createHonoGuard, type HonoGuardEnv, type HonoGuardOptions } from "./adapters/hono/guard.js";
