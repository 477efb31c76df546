import type pg from "pg";
import type { Cluster } from "./cluster.js";
import type { Fleet } from "./processes.js";
import type { FaultAt } from "./repick.js";

/** How many of each fault a run injects. */
export interface FaultCounts {
  readonly killWorker: number;
  readonly killReceiver: number;
  readonly freezeWorker: number;
  readonly restartPostgres: number;
  readonly terminateBackends: number;
}

export type FaultKind = keyof FaultCounts;

export interface FaultPlan {
  readonly counts: FaultCounts;
  /** Pause between two faults. */
  readonly intervalMs: number;
  /** How long a frozen worker stays stopped (over 30 s exercises the idle bound that frees its event). */
  readonly freezeMs: number;
}

/** Runs the plan's faults in a seeded shuffled order, one every `intervalMs`; resolves once all are over. */
export async function runFaults(
  plan: FaultPlan,
  fleet: Fleet,
  cluster: Cluster,
  admin: pg.Pool,
  random: () => number,
  note: (line: string) => void,
  happened: (fault: FaultAt) => void = () => {},
): Promise<Record<FaultKind, number>> {
  const deck: FaultKind[] = [];
  for (const [kind, n] of Object.entries(plan.counts) as [FaultKind, number][]) {
    for (let i = 0; i < n; i++) deck.push(kind);
  }
  for (let i = deck.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [deck[i], deck[j]] = [deck[j] as FaultKind, deck[i] as FaultKind];
  }
  // The first freeze comes first, while the backlog is busiest: the frozen worker then surely holds events the
  // others must get past.
  const freeze = deck.indexOf("freezeWorker");
  if (freeze > 0) [deck[0], deck[freeze]] = [deck[freeze] as FaultKind, deck[0] as FaultKind];
  const done: Record<FaultKind, number> = {
    killWorker: 0,
    killReceiver: 0,
    freezeWorker: 0,
    restartPostgres: 0,
    terminateBackends: 0,
  };
  const background: Promise<unknown>[] = [];
  const pick = <T>(list: T[]): T | undefined => list[Math.floor(random() * list.length)];
  while (deck.length > 0) {
    await new Promise((r) => setTimeout(r, plan.intervalMs));
    const kind = deck.shift() as FaultKind;
    // One frozen worker at a time: a freeze waits (a few faults later) while another worker is stopped.
    if (kind === "freezeWorker" && fleet.workers().some((m) => m.frozen)) {
      deck.splice(Math.min(deck.length, 5), 0, kind);
      continue;
    }
    const at = Date.now();
    switch (kind) {
      case "killWorker":
      case "killReceiver": {
        const list = kind === "killWorker" ? fleet.workers() : fleet.receivers();
        const member = pick(list.filter((m) => !m.frozen && !m.down));
        if (!member) continue;
        note(`kill -9 ${member.role} ${member.index}`);
        background.push(fleet.killAndRestart(member, 300 + random() * 1200));
        break;
      }
      case "freezeWorker": {
        const member = pick(fleet.workers().filter((m) => !m.frozen && !m.down));
        if (!member) continue;
        note(`SIGSTOP worker ${member.index} for ${plan.freezeMs} ms`);
        background.push(fleet.freeze(member, plan.freezeMs));
        break;
      }
      case "restartPostgres":
        note("pg_ctl restart -m immediate");
        await cluster.restartImmediate();
        break;
      case "terminateBackends": {
        const { rows } = await admin
          .query<{ n: number }>(
            `select count(pg_terminate_backend(pid))::int as n from (
               select pid from pg_stat_activity
                where application_name like 'hookledger-%' and pid <> pg_backend_pid()
                order by random() limit 3) picked`,
          )
          .catch(() => ({ rows: [{ n: 0 }] }));
        note(`pg_terminate_backend: ${rows[0]?.n ?? 0} hookledger backends`);
        break;
      }
    }
    happened({ kind, at });
    done[kind]++;
  }
  await Promise.all(background);
  return done;
}
