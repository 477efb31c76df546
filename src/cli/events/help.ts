/** `hookledger events --help`, and the section of each subcommand for `hookledger events <sub> --help`. */
export const EVENTS_HELP = {
  list: `hookledger events list [--source S] [--status STATUS] [--outcome OUTCOME] [--type T]
                       [--since T] [--until T] [--limit N] [--json]
  Events newest first (default 50): id (source/dedupe_key), type, status/outcome, attempts, received, settled,
  last error.
    --status   pending, failed, settled, dead or inline
    --outcome  applied, stale, unhandled or ignored (settled events)
    --since, --until   received at or after / before: a duration back from now (90m, 24h, 7d) or a timestamp
                       (2024-05-01, 2024-05-01T12:00:00Z)
  Examples:
    hookledger events list --status dead --source stripe
    hookledger events list --type invoice.paid --since 24h --limit 200 --json
`,
  show: `hookledger events show ID [--json]      (ID is source/dedupe_key, or --source S KEY)
  One event: status, attempts, last error, timestamps, how it arrived, duplicates and body mismatches, the
  headers kept at receipt and the payload pretty-printed. For a pruned event, when it was pruned: its tombstone
  keeps the key so a late delivery is answered as a duplicate.
  Examples:
    hookledger events show stripe/evt_1NqZ2b2eZvKYlo2C
    hookledger events show --source github 8f2c6a10-5b1e-11ef-9a1c-7d0c3c1f2a11 --json
`,
  retry: `hookledger events retry ID… [--force] [--json]   (IDs are source/dedupe_key, or --source S KEY…)
  Makes failed and dead events pending and due now, and wakes the workers. Attempts and the last error are kept:
  a dead event gets one attempt now and is dead again if it fails. Settled events are refused unless --force:
  the version guard keeps entities from going backwards, but a handler's side effects (emails, API calls) happen
  again unless it is idempotent. Exits 1 when any id was not retried.
  Examples:
    hookledger events retry stripe/evt_1 stripe/evt_2
    hookledger events retry --source github 8f2c6a10-5b1e-11ef-9a1c-7d0c3c1f2a11
    hookledger events retry --force stripe/evt_1     # run a settled event's handler again
`,
  requeue: `hookledger events requeue (--status dead|failed | --outcome unhandled) [--source S] [--type T]
                          [--since T] [--until T] [--yes]
  Makes every matching event pending and due now, oldest first, 1,000 per statement. Asks for confirmation on a
  terminal; without one, pass --yes. Attempts, last error and how the event arrived are kept, as with retry.
  --outcome unhandled takes settled events no handler ran for (say, after a handler was registered under a
  misspelled source or type): fix the registration, then requeue them.
  Examples:
    hookledger events requeue --status dead --source stripe
    hookledger events requeue --outcome unhandled --source stripe --type invoice.paid --yes
    hookledger events requeue --status dead --type invoice.paid --since 2024-05-01 --until 2024-05-02 --yes
`,
} as const;

/** What every subcommand takes besides its own options. */
export const EVENTS_COMMON = `Every subcommand: --config FILE (default: ./hookledger.config.mjs, else the demo); -h, --help;
DATABASE_URL and HOOKLEDGER_SCHEMA choose the database and the ledger's schema.
`;

/** The whole `hookledger events --help`. */
export const EVENTS_USAGE = `hookledger events: look at the ledger's events and repair them

Usage: hookledger events <list|show|retry|requeue> [options]

${Object.values(EVENTS_HELP).join("\n")}
${EVENTS_COMMON}`;
