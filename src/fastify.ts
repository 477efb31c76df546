// hookledger/fastify: the Fastify plugin and inline guard (a separate entry, so apps without Fastify never load its
// types).
export { type FastifyHandlerOptions, createFastifyHandler } from "./adapters/fastify/receiver.js";
export {
  type FastifyGuardHooks,
  type FastifyGuardOptions,
  createFastifyGuard,
  inlineTicket,
} from "./adapters/fastify/guard.js";
