// The operator's views: dead and failed events with bulk retry and requeue (each recorded), and health charts.
import { lineChart } from "./charts.js";
import { confirmAction, get, h, post, seconds, when } from "./dom.js";
import { eventsTable, filterForm, table, withParam } from "./list.js";

const DEAD_FILTERS = [
  ["source", "Source", "text"],
  ["type", "Type", "text"],
  ["status", "Status", ["", "dead", "failed"]],
];

/** Dead and failed events, newest first, with bulk actions and the record of what was done. */
export async function deadView(main, query) {
  main.append(h("h1", {}, "Dead & failed"), filterForm(query, "dead", DEAD_FILTERS));
  const params = Object.fromEntries(query);
  const status = params.status;
  const page = await get("events", { ...params, troubled: status ? undefined : "1" });
  const holder = h("div", {}, eventsTable(page.events, { selectable: true }));
  const note = h("p", { role: "status" });
  const retry = h("button", { type: "button" }, "Retry selected");
  retry.addEventListener("click", async () => {
    const picked = [...holder.querySelectorAll("input[type=checkbox]:checked")].map((box) => ({
      source: box.dataset.source,
      dedupeKey: box.dataset.key,
    }));
    if (picked.length === 0) {
      note.textContent = "Select events first.";
      return;
    }
    const ok = await confirmAction(
      `Retry ${picked.length} event${picked.length === 1 ? "" : "s"}?`,
      "Each becomes pending and runs again now. This is recorded under your name.",
      "Retry",
    );
    if (!ok) return;
    const { counts } = await post("retry", { events: picked });
    note.textContent = `Retry: ${describe(counts)}.`;
    reload();
  });
  const requeueStatus = status === "failed" ? "failed" : "dead";
  const requeue = h(
    "button",
    { type: "button", className: "secondary" },
    `Requeue all ${requeueStatus} matching`,
  );
  requeue.addEventListener("click", async () => {
    const filter = { status: requeueStatus, source: params.source, type: params.type };
    const { count } = await get("requeue-count", filter);
    if (count === 0) {
      note.textContent = `No ${requeueStatus} events match.`;
      return;
    }
    const ok = await confirmAction(
      `Requeue ${count} ${requeueStatus} event${count === 1 ? "" : "s"}?`,
      "They become pending and run again now, oldest first. This is recorded under your name.",
      "Requeue",
    );
    if (!ok) return;
    const report = await post("requeue", {
      filter: Object.fromEntries(Object.entries(filter).filter(([, v]) => v)),
    });
    note.textContent = `Requeued ${report.requeued} of ${report.matched}.`;
    reload();
  });
  main.append(h("div", { className: "toolbar" }, retry, requeue), note, holder);
  if (page.next)
    main.append(h("p", {}, h("a", { href: `#/dead?${withParam(query, "cursor", page.next)}` }, "Older →")));
  const { actions } = await get("actions");
  main.append(
    h("h2", {}, "Recorded actions"),
    table(
      ["When", "Who", "Action", "What", "Result"],
      actions.map((a) => [when(a.at), a.actor, a.action, summarize(a.events), describe(a.result)]),
    ),
  );
  return undefined;

  function reload() {
    setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 300);
  }
}

function summarize(events) {
  if (Array.isArray(events))
    return events.length <= 2
      ? events.map((e) => (typeof e === "string" ? e : e.dedupeKey)).join(", ")
      : `${events.length} ${typeof events[0] === "string" ? "messages" : "events"}`;
  if (events?.filter)
    return Object.entries(events.filter)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
  return "";
}

function describe(result) {
  if (!result || typeof result !== "object") return "";
  return Object.entries(result)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** Cards and charts of the last hour or day, for one source or all; refreshed every 10 s. */
export async function healthView(main, query) {
  const window = query.get("window") === "24h" ? "24h" : "1h";
  const source = query.get("source") ?? "";
  const choose = h(
    "div",
    { className: "toolbar" },
    ["1h", "24h"].map((w) =>
      h(
        "a",
        {
          href: `#/health?${withParam(query, "window", w)}`,
          "aria-current": w === window ? "page" : undefined,
        },
        w === "1h" ? "Last hour" : "Last day",
      ),
    ),
  );
  const body = h("div");
  main.append(h("h1", {}, `Health${source ? ` · ${source}` : ""}`), choose, body);
  const load = async () => {
    const data = await get("health", { window, source });
    body.replaceChildren(...healthBody(data, window));
  };
  await load();
  const timer = setInterval(() => {
    if (!document.hidden) load().catch(() => {});
  }, 10_000);
  return () => clearInterval(timer);
}

function healthBody(data, window) {
  const perSecond = data.bucketMs / 1000;
  const times = data.buckets.map((b) => b.at);
  const sum = (key) => data.sources.reduce((n, s) => n + s[key], 0);
  const deliveries = sum("deliveries");
  const span = window === "24h" ? 86_400 : 3_600;
  const backlog = data.ledger.reduce((n, s) => n + s.backlog, 0);
  const oldest = Math.max(0, ...data.ledger.map((s) => s.oldestPendingSeconds ?? 0));
  const settle = data.ledger.filter((s) => s.settleP99Seconds !== null);
  const cards = [
    ["Deliveries / s", (deliveries / span).toFixed(2)],
    ["Duplicate rate", deliveries === 0 ? "–" : `${((100 * sum("duplicates")) / deliveries).toFixed(1)} %`],
    ["Signature & other refusals", String(sum("refused"))],
    ["503s", String(sum("unavailable"))],
    ["Backlog", String(backlog)],
    ["Oldest pending", backlog === 0 ? "–" : seconds(oldest)],
    ["Settle p50", settle.length === 0 ? "–" : seconds(Math.max(...settle.map((s) => s.settleP50Seconds)))],
    ["Settle p99", settle.length === 0 ? "–" : seconds(Math.max(...settle.map((s) => s.settleP99Seconds)))],
  ];
  const rate = (key) => data.buckets.map((b) => b[key] / perSecond);
  return [
    h(
      "div",
      { className: "cards" },
      cards.map(([k, v]) =>
        h("div", { className: "card" }, h("div", { className: "v" }, v), h("div", { className: "k" }, k)),
      ),
    ),
    h(
      "div",
      { className: "charts" },
      lineChart(
        "Deliveries per second",
        times,
        [
          { name: "accepted", color: "#0b57d0", values: rate("accepted") },
          { name: "duplicates", color: "#8a5300", values: rate("duplicates") },
        ],
        (v) => v.toFixed(v < 10 ? 2 : 0),
      ),
      lineChart(
        "Refused and unavailable per second",
        times,
        [
          { name: "refused (signature, malformed…)", color: "#b3261e", values: rate("refused") },
          { name: "503", color: "#6a1b9a", values: rate("unavailable") },
          { name: "body mismatches", color: "#146c2e", values: rate("mismatches") },
        ],
        (v) => v.toFixed(v < 10 ? 2 : 0),
      ),
      lineChart(
        "Time to settle",
        times,
        [
          { name: "p50", color: "#146c2e", values: data.buckets.map((b) => b.settleP50) },
          { name: "p99", color: "#b3261e", values: data.buckets.map((b) => b.settleP99) },
        ],
        seconds,
      ),
    ),
    h("h2", {}, "Per source"),
    table(
      [
        "Source",
        "Deliveries",
        "Duplicates",
        "Refused",
        "503s",
        "Backlog",
        "Oldest pending",
        "Dead",
        "Settle p50",
        "Settle p99",
      ],
      data.sources.map((s) => {
        const l = data.ledger.find((x) => x.source === s.source) ?? {};
        return [
          h("a", { href: `#/health?window=${window}&source=${encodeURIComponent(s.source)}` }, s.source),
          String(s.deliveries),
          String(s.duplicates),
          String(s.refused),
          String(s.unavailable),
          String(l.backlog ?? 0),
          seconds(l.oldestPendingSeconds),
          String(l.dead ?? 0),
          seconds(l.settleP50Seconds),
          seconds(l.settleP99Seconds),
        ];
      }),
    ),
    h(
      "p",
      { className: "muted" },
      `Settle times from the newest ${data.settleSample.toLocaleString()} settled events of each source at most.`,
    ),
  ];
}
