import { CliError } from "../errors.js";
import type { Command } from "./types.js";

const HELP = `hookledger reconcile: find the provider's events the ledger lacks, and add them

Usage:
  hookledger reconcile stripe --source NAME --since T [--dry-run] [--json] [--api-key-env NAME] [--config FILE]

Lists Stripe's events over the window (GET /v1/events, official SDK, oldest first), compares them with the ledger,
and claims the missing ones with arrived_via = 'replay', printing their ids. Events already in the ledger are left
alone. A service can run the same pass on an interval (startReconciler).

Options:
  --source NAME        the configured stripe source
  --since T            window start: an ISO date/time or a duration back (40m, 2h, 3d); Stripe keeps 30 days
  --dry-run            list the missing ids, write nothing
  --json               print the report as JSON
  --api-key-env NAME   the variable holding the Stripe API key (default: STRIPE_API_KEY)
  --config FILE        configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help           show this help

Examples:
  STRIPE_API_KEY=rk_live_… hookledger reconcile stripe --source stripe --since 2h --dry-run
  hookledger reconcile stripe --source stripe-eu --since 1d --api-key-env STRIPE_EU_API_KEY --json
`;

/**
 * `hookledger reconcile <provider> …`.
 *
 * @example
 * await command.run(["stripe", "--source", "stripe", "--since", "2h", "--dry-run"], io);
 */
export const command: Command = {
  summary: "reconcile stripe: add the provider's events the ledger lacks",
  async run(args, io) {
    const [provider, ...rest] = args;
    if (provider === "stripe") {
      const { runStripeCommand } = await import("./replay-stripe.js");
      return runStripeCommand("reconcile", rest, io, HELP);
    }
    if (provider === undefined || provider === "--help" || provider === "-h" || provider === "help") {
      io.out(HELP);
      return provider === undefined ? 2 : 0;
    }
    if (provider.startsWith("-")) {
      throw new CliError(
        `unknown option '${provider}'; reconcile takes a provider first: reconcile stripe … (see \`hookledger reconcile --help\`)`,
        2,
        "reconcile",
      );
    }
    throw new CliError(`reconcile: unknown provider '${provider}'; only reconcile stripe exists`, 2);
  },
};
