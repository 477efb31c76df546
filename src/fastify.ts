// hookledger/fastify: the Fastify plugin and inline guard (a separate entry, so apps without Fastify never load its
// types).
export { type FastifyPluginOptions, hookledgerFastify } from "./adapters/fastify/receiver.js";
export {
  type InlineFastifyHooks,
  type InlineFastifyOptions,
  inlineGuardFastify,
  inlineTicket,
} from "./adapters/fastify/guard.js";
