import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { SourceConfig } from "../../config/types.js";
import { type DeliverySigner, idHeaderOf, signDelivery, typeHeaderOf } from "../../testing/sign.js";
import { commandDatabaseUrl, loadConfig } from "../config.js";
import { CliError } from "../errors.js";
import { parseOptions } from "../options.js";
import { sendDemo } from "../send.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger send [options]
       hookledger send --source NAME --file EVENT.json [--file …] [options]

Without --file, signs and posts the demo's events (a new one, its duplicate, an out-of-order pair, a GitHub push)
and prints what the worker made of them. With --file, signs each JSON file byte for byte with the first secret of
source NAME, the way its provider does, and posts it to URL/webhooks/NAME, printing each answer. Exits 1 when an
answer is not 2xx.

Options:
  --source NAME   the configured source to sign for and post to
  --file FILE     a JSON event body (repeatable: several events, sent in order)
  --type TYPE     the event type, for providers that send it in a header (github, shopify, awardee, generic
                  with typeHeader), e.g. push
  --id ID         the delivery id, for providers that send it in a header (default: a random one per file;
                  one file only)
  --dup N         send N extra copies of each event, as a provider's retries would
  --reorder       send the files in reverse order
  --url URL       the service's base URL (default: http://127.0.0.1:PORT, PORT from the config or 3000)
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help      show this help

Examples:
  hookledger send
  hookledger send --source stripe --file invoice-paid.json
  hookledger send --source stripe --file created.json --file updated.json --reorder --dup 2
  hookledger send --source github --type push --file push.json --url http://127.0.0.1:3000
`;

const options = {
  source: { type: "string" },
  file: { type: "string", multiple: true },
  type: { type: "string" },
  id: { type: "string" },
  dup: { type: "string" },
  reorder: { type: "boolean" },
  url: { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `hookledger send`: signs and posts the demo's events, or any JSON file as any configured source (see HELP).
 *
 * @example
 * // hookledger send --source stripe --file event.json --dup 1
 * await command.run(["--source", "stripe", "--file", "event.json", "--dup", "1"], io);
 */
export const command: Command = {
  summary: "sign and post the demo's events, or JSON files as any configured source",
  async run(args, io) {
    const { values, positionals } = parseOptions("send", args, options, { positionals: true });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    if (positionals.length > 0) {
      throw new CliError(`unexpected argument '${positionals[0]}'; see \`hookledger send --help\``, 2);
    }
    const files = values.file ?? [];
    if (files.length === 0) {
      for (const flag of ["source", "type", "id", "dup", "reorder"] as const) {
        if (values[flag] !== undefined) throw new CliError(`--${flag} needs --file EVENT.json`, 2);
      }
    }
    // It signs with the sources' secrets, and sends no alert.
    const loaded = await loadConfig(values.config, { alerts: false });
    const base = (values.url ?? `http://127.0.0.1:${loaded.config.port}`).replace(/\/$/, "");
    if (files.length === 0) {
      const databaseUrl = await commandDatabaseUrl(loaded.config).catch(() => undefined);
      const database = databaseUrl ? { url: databaseUrl, schema: loaded.config.schema } : undefined;
      const refused = await sendDemo(
        base,
        database,
        (line) => io.out(`${line}\n`),
        (url, init) => post(base, url, init),
      );
      return refused > 0 ? 1 : 0;
    }
    const name = values.source;
    if (name === undefined) throw new CliError("--file needs --source NAME: the source to sign for", 2);
    const source = loaded.raw.sources.find((s) => s.name === name);
    const resolved = loaded.config.sources.find((s) => s.name === name);
    if (!source || !resolved) {
      const names = loaded.config.sources.map((s) => s.name).join(", ");
      throw new CliError(
        `no source '${name}' in ${loaded.file ?? "the demo config"}; configured: ${names}`,
        2,
      );
    }
    const signer = signerOf(source, resolved.secrets[0] ?? "");
    checkHeaders(signer, name, values.type, values.id, files.length);
    const dup = values.dup === undefined ? 0 : count("--dup", values.dup);
    if (values.reorder && files.length < 2) throw new CliError("--reorder needs two or more --file", 2);
    const bodies = await Promise.all(files.map(readJson));
    const order = [...bodies.keys()];
    if (values.reorder) order.reverse();
    const url = `${base}/webhooks/${encodeURIComponent(name)}`;
    let failed = 0;
    for (const index of order) {
      const id = idHeaderOf(signer) ? (values.id ?? randomUUID()) : undefined;
      for (let copy = 0; copy <= dup; copy++) {
        // Signed again for every copy: a provider's retry carries a fresh timestamp.
        const delivery = signDelivery({
          ...signer,
          body: bodies[index] as Uint8Array,
          ...(id !== undefined && { id }),
          ...(values.type !== undefined && { type: values.type }),
        });
        const response = await post(base, url, { method: "POST", ...delivery });
        const answer = (await response.text()).trim();
        if (response.status < 200 || response.status >= 300) failed++;
        const label = copy === 0 ? files[index] : `${files[index]} (copy ${copy})`;
        io.out(`POST /webhooks/${name}  ${label}  → ${response.status} ${answer}\n`);
      }
    }
    return failed > 0 ? 1 : 0;
  },
};

function signerOf(source: SourceConfig, secret: string): DeliverySigner {
  return {
    provider: source.provider,
    secret,
    ...(source.awardee && { awardee: source.awardee }),
    ...(source.generic && { generic: source.generic }),
  };
}

function checkHeaders(
  signer: DeliverySigner,
  name: string,
  type: string | undefined,
  id: string | undefined,
  files: number,
): void {
  const typeHeader = typeHeaderOf(signer);
  if (typeHeader && type === undefined) {
    throw new CliError(
      `source '${name}' (${signer.provider}) reads the event type from ${typeHeader}: pass --type`,
      2,
    );
  }
  if (!typeHeader && type !== undefined) {
    throw new CliError(
      `source '${name}' (${signer.provider}) reads the event type from the body; drop --type`,
      2,
    );
  }
  if (id !== undefined && !idHeaderOf(signer)) {
    throw new CliError(
      `source '${name}' (${signer.provider}) reads the event id from the body; drop --id`,
      2,
    );
  }
  if (id !== undefined && files > 1) {
    throw new CliError("--id names one delivery: give one --file with it, or drop --id for random ids", 2);
  }
}

async function readJson(file: string): Promise<Uint8Array> {
  const bytes = await readFile(file).catch(() => {
    throw new CliError(`cannot read --file ${file}; pass an existing JSON file`, 2);
  });
  try {
    JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new CliError(`--file ${file} is not JSON; send a JSON event body`, 2);
  }
  return bytes;
}

function count(flag: string, text: string): number {
  const n = /^\d{1,4}$/.test(text) ? Number(text) : -1;
  if (n < 0 || n > 1000) throw new CliError(`${flag} '${text}' is not a whole number from 0 to 1000`, 2);
  return n;
}

/** POSTs, turning "nothing listens there" into the one sentence a user needs. */
async function post(base: string, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const code = ((error as Error).cause as { code?: string } | undefined)?.code;
    if (code === "ECONNREFUSED") {
      throw new CliError(
        `nothing is listening on ${base}; start it with \`npx hookledger serve\` (in the hookledger repository: \`npm start\`)`,
      );
    }
    throw new CliError(`could not POST to ${url}: ${(error as Error).message}`);
  }
}
