// What one "delivery received" line costs the event loop (docs/benchmarks.md, "What logging cost"): hookledger's
// createLogger() as shipped (one asynchronous writer on stdout) against the same logger on a synchronous
// destination, alternated in one process whose stdout is a file, then a pipe. The loop yields every 20 lines, as a
// receiver's event loop does between requests. Run: node --import tsx bench/log-probe.ts
import { spawn } from "node:child_process";
import { openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const LINES = 50_000;
const ROUNDS = 5;

async function child(): Promise<void> {
  const { createLogger } = await import("hookledger");
  const { default: pino } = await import("pino");
  const loggers = {
    "asynchronous (shipped)": createLogger({ format: "json" }),
    synchronous: createLogger({ format: "json", destination: pino.destination({ dest: 1, sync: true }) }),
  };
  const times: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, log] of Object.entries(loggers)) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < LINES; i++) {
        log.info(
          {
            source: "stripe",
            eventId: `evt_${i}`,
            type: "payment_intent.succeeded",
            result: "accepted",
            secretIndex: 0,
            durationMs: 3,
          },
          "delivery received",
        );
        if (i % 20 === 0) await new Promise(setImmediate);
      }
      const took = Number(process.hrtime.bigint() - started) / 1000 / LINES;
      times[name] = [...(times[name] ?? []), took];
    }
  }
  for (const [name, values] of Object.entries(times)) {
    const sorted = values.toSorted((a, b) => a - b);
    process.stderr.write(`  ${name}: median ${sorted[ROUNDS >> 1]?.toFixed(2)} µs per line\n`);
  }
}

async function run(stdout: "file" | "pipe"): Promise<void> {
  const file = join(tmpdir(), `hookledger-log-probe-${process.pid}.out`);
  const out = stdout === "file" ? openSync(file, "w") : "pipe";
  const probe = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "child"], {
    stdio: ["ignore", out, "inherit"],
  });
  probe.stdout?.resume();
  console.error(`stdout to a ${stdout}:`);
  await new Promise((resolve) => probe.once("exit", resolve));
  rmSync(file, { force: true });
}

if (process.argv[2] === "child") await child();
else {
  await run("file");
  await run("pipe");
}
