import { CliError } from "../errors.js";
import type { Command } from "./types.js";

const HELP = `hookledger replay: bring back events that never arrived, from the provider's API

Usage:
  hookledger replay stripe --source NAME --since T [--until T] [--type TYPE …] [--undelivered-only]
                           [--via URL] [--dry-run] [--json] [--api-key-env NAME] [--config FILE]
  hookledger replay github --source NAME --repo OWNER/NAME --hook-id N [--since T] …   (see replay github --help)

replay stripe pages Stripe's events API (GET /v1/events, official SDK) over the window, oldest first, and claims
every event the ledger lacks with arrived_via = 'replay' (dedupe key = the event id, so events already delivered
count as already in the ledger). Replayed rows hold the API's rendering of the event, not the original delivery's
bytes. Stripe keeps events for 30 days: an older --since starts at the 30-day edge, and the report says so.

Options:
  --source NAME        the configured stripe source the events belong to
  --since T            window start: an ISO date/time (2025-06-01T12:00:00Z) or a duration back (40m, 2h, 3d)
  --until T            window end (default: now)
  --type TYPE          only this event type (\`*\` wildcards allowed); repeat for up to 20 types
  --undelivered-only   only events Stripe has not delivered to every endpoint (delivery_success=false)
  --via URL            re-POST each event to the receiver at URL (POST URL/replay/:source) with the replay token
                       from HOOKLEDGER_REPLAY_TOKEN instead of writing to the ledger (no database needed)
  --dry-run            fetch and classify against the ledger, list the missing ids, write nothing
  --json               print the report as JSON
  --api-key-env NAME   the variable holding the Stripe API key (default: STRIPE_API_KEY); never pass the key itself
  --config FILE        configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help           show this help

Environment: STRIPE_API_KEY (a secret key, or a restricted key with Events read), DATABASE_URL, HOOKLEDGER_SCHEMA,
  HOOKLEDGER_REPLAY_TOKEN (--via)

Examples:
  # after a 40-minute outage: "4,812 fetched, 4,790 already in the ledger, 22 new, 0 failed"
  STRIPE_API_KEY=rk_live_… hookledger replay stripe --source stripe --since 2h
  hookledger replay stripe --source stripe --since 2025-06-01T09:00:00Z --until 2025-06-01T10:00:00Z --dry-run
  hookledger replay stripe --source stripe --since 3d --type 'invoice.*' --undelivered-only --json
  HOOKLEDGER_REPLAY_TOKEN=… hookledger replay stripe --source stripe --since 1h --via https://hooks.example.com
`;

/**
 * `hookledger replay <provider> …`: dispatches to the provider's replay.
 *
 * @example
 * await command.run(["stripe", "--source", "stripe", "--since", "2h"], io);
 */
export const command: Command = {
  summary: "replay stripe|github: bring back events that never arrived, from the provider's API",
  async run(args, io) {
    const [provider, ...rest] = args;
    if (provider === "stripe") {
      const { runStripeCommand } = await import("./replay-stripe.js");
      return runStripeCommand("replay", rest, io, HELP);
    }
    if (provider === "github") {
      const { replayGithubCommand } = await import("./replay-github.js");
      return replayGithubCommand(rest, io);
    }
    if (provider === undefined || provider === "--help" || provider === "-h" || provider === "help") {
      io.out(HELP);
      return provider === undefined ? 2 : 0;
    }
    if (provider.startsWith("-")) {
      throw new CliError(
        `unknown option '${provider}'; replay takes a provider first: replay stripe … or replay github … (see \`hookledger replay --help\`)`,
        2,
        "replay",
      );
    }
    throw new CliError(`replay: unknown provider '${provider}'; use replay stripe or replay github`, 2);
  },
};
