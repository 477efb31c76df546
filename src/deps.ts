import { createRequire } from "node:module";
import type PgModule from "pg";
import type * as PinoModule from "pino";
import type * as PromModule from "prom-client";

// pg, pino and prom-client are CommonJS packages that every part of hookledger needs, but not at import time:
// required synchronously on first use, `import "hookledger"` pays none of their load time (most of the import cost;
// see `npm run bench:footprint`). The app's own `import pg from "pg"` reaches the same module instance.
const require = createRequire(import.meta.url);

let pgModule: typeof PgModule | undefined;
let pinoModule: typeof PinoModule | undefined;
let promModule: typeof PromModule | undefined;

/** The `pg` package, loaded on first use. @example new (pg().Pool)({ connectionString }) */
export const pg = (): typeof PgModule => {
  pgModule ??= require("pg") as typeof PgModule;
  return pgModule;
};

/** The `pino` package, loaded on first use. @example pino().pino({ level: "info" }) */
export const pino = (): typeof PinoModule => {
  pinoModule ??= require("pino") as typeof PinoModule;
  return pinoModule;
};

/** The `prom-client` package, loaded on first use. @example new (promClient().Registry)() */
export const promClient = (): typeof PromModule => {
  promModule ??= require("prom-client") as typeof PromModule;
  return promModule;
};
