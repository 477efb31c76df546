// hookledger/express: the Express adapter and inline guard (a separate entry, so apps without Express never load
// its types).
export {
  assertNoBodyParserBefore,
  createExpressHandler,
  type ExpressHandlerOptions,
} from "./adapters/express/receiver.js";
export { type ExpressGuardOptions, createExpressGuard } from "./adapters/express/guard.js";
