// hookledger/testing: signers for every provider, a provider simulator and a handler test helper (a separate entry,
// so `import "hookledger"` never loads test code). See docs/testing.md.
export {
  type HandlerRunResult,
  type RunHandlerOptions,
  runHandler,
  type TestEvent,
  type TestOutboxMessage,
} from "./testing/run-handler.js";
export {
  type DeliverySigner,
  type SignDeliveryOptions,
  type SignedDelivery,
  signDelivery,
} from "./testing/sign.js";
export {
  type FetchTarget,
  type SimulatedEvent,
  type SimulateOptions,
  type SimulationReport,
  seededRandom,
  simulateProvider,
} from "./testing/simulate.js";
