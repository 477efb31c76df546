// The dashboard's router and its two event views: the live list and one event. ops.js has dead & failed and health,
// outbox.js the outbox.
import { badge, confirmAction, eventLink, get, h, post, setCsrf, when } from "./dom.js";
import { eventsTable, filterForm, table, withParam } from "./list.js";
import { deadView, healthView } from "./ops.js";
import { outboxMessageView, outboxView } from "./outbox.js";

const main = document.getElementById("main");
let stopView = () => {};

async function start() {
  const session = await get("session");
  setCsrf(session.csrf);
  document.getElementById("user").textContent = `Signed in as ${session.user}`;
  document.getElementById("signout").addEventListener("click", async () => {
    await fetch("/dashboard/api/logout", { method: "POST", headers: { "x-hookledger-csrf": session.csrf } });
    location.assign("/dashboard/login");
  });
  addEventListener("hashchange", route);
  route();
}

function route() {
  stopView();
  stopView = () => {};
  const [path, queryText = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(queryText);
  const view = parts[0] ?? "events";
  for (const link of document.querySelectorAll("nav a")) {
    const current = view === "event" ? "events" : view === "outbox-message" ? "outbox" : view;
    if (link.dataset.view === current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  main.replaceChildren();
  const shown =
    view === "event"
      ? eventView(parts[1], parts.slice(2).join("/"))
      : view === "dead"
        ? deadView(main, query)
        : view === "health"
          ? healthView(main, query)
          : view === "outbox"
            ? outboxView(main, query)
            : view === "outbox-message"
              ? outboxMessageView(main, parts.slice(1).join("/"))
              : eventsView(query);
  Promise.resolve(shown)
    .then((stop) => {
      if (typeof stop === "function") stopView = stop;
    })
    .catch(showError);
}

function showError(error) {
  main.append(h("p", { className: "error", role: "alert" }, String(error.message ?? error)));
}

async function eventsView(query) {
  main.append(h("h1", {}, "Events"), filterForm(query, "events"));
  const live = h("span", { className: "live", role: "status" });
  const pager = h("div", { className: "pager" });
  const holder = h("div");
  main.append(h("div", { className: "toolbar" }, live), holder, pager);
  const params = Object.fromEntries(query);
  const cursor = params.cursor;
  let known;
  const load = async () => {
    const page = await get("events", params);
    const keys = new Set(page.events.map((e) => `${e.source}\u0000${e.dedupeKey}`));
    const fresh = known ? new Set([...keys].filter((k) => !known.has(k))) : new Set();
    known = keys;
    holder.replaceChildren(eventsTable(page.events, { fresh }));
    pager.replaceChildren(
      ...[
        cursor && h("a", { href: `#/events?${withParam(query, "cursor", undefined)}` }, "← Newest"),
        page.next && h("a", { href: `#/events?${withParam(query, "cursor", page.next)}` }, "Older →"),
      ].filter(Boolean),
    );
    live.textContent = cursor || params.id ? "" : `Live · updated ${new Date().toLocaleTimeString()}`;
  };
  await load();
  if (cursor || params.id) return undefined;
  // Only the first page is live: new events arrive at its top, and statuses change under it.
  const timer = setInterval(() => {
    if (!document.hidden) load().catch(showError);
  }, 2000);
  return () => clearInterval(timer);
}

async function eventView(source, key) {
  const { event, attempts, entity } = await get("event", { source, key });
  const retry = h("button", { type: "button" }, "Retry now");
  retry.addEventListener("click", async () => {
    if (
      !(await confirmAction(
        "Retry this event?",
        `${source} ${key} becomes pending and runs again now.`,
        "Retry",
      ))
    )
      return;
    const { results } = await post("retry", { events: [{ source, dedupeKey: key }] });
    main.prepend(h("p", { role: "status" }, `Retry: ${results[0]?.result ?? "done"}`));
    route();
  });
  const facts = [
    ["Source", event.source],
    ["Event id", event.dedupeKey],
    ["Type", event.type],
    ["Status", badge(event.status)],
    ["Outcome", event.outcome ?? "–"],
    ["Attempts", String(event.attempts)],
    ["Received", when(event.receivedAt)],
    ["Settled", when(event.settledAt) || "–"],
    ["Arrived via", event.arrivedVia],
    [
      "Secret that matched",
      event.secretIndex === null ? "none recorded" : `#${event.secretIndex + 1} of the source's list`,
    ],
    ["Duplicate deliveries", String(event.duplicates)],
    ["Body mismatches", String(event.bodyMismatches)],
    [
      "Entity",
      event.entity ? `${event.entity.type} ${event.entity.id} (version ${event.entity.version ?? "–"})` : "–",
    ],
    ["Body", h("span", {}, `${event.bodyBytes} bytes · sha256 `, h("code", {}, event.bodySha256))],
  ];
  main.append(
    h("p", {}, h("a", { href: "#/events" }, "← Events")),
    h("h1", {}, `${event.type} `, h("span", { className: "mono" }, event.dedupeKey)),
    h(
      "dl",
      { className: "facts" },
      facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
    ),
    h(
      "div",
      { className: "toolbar" },
      (event.status === "failed" || event.status === "dead") && retry,
      h(
        "a",
        {
          href: `/dashboard/api/body?source=${encodeURIComponent(source)}&key=${encodeURIComponent(key)}`,
          download: "",
        },
        "Download the raw body",
      ),
    ),
    h("h2", {}, "Payload"),
    h("pre", { tabindex: "0", "aria-label": "Payload" }, JSON.stringify(event.payload, null, 2)),
    h("h2", {}, "Kept headers"),
    table(["Header", "Value"], Object.entries(event.headers)),
    h("h2", {}, "Failed attempts"),
    attempts.length === 0
      ? h("p", { className: "muted" }, "None.")
      : h(
          "ol",
          {},
          attempts.map((a) => {
            const [first, ...stack] = a.error.split("\n");
            return h(
              "li",
              {},
              h("strong", {}, `Attempt ${a.attempt}`),
              ` · ${when(a.failedAt)} · `,
              h("span", { className: "error" }, first),
              stack.length > 0 && h("details", {}, h("summary", {}, "Stack"), h("pre", {}, stack.join("\n"))),
            );
          }),
        ),
  );
  if (entity) {
    main.append(
      h("h2", {}, `History of ${event.entity.type} ${event.entity.id}`),
      h(
        "p",
        { className: "muted" },
        entity.applied
          ? `The version guard holds ${entity.applied.version}, as its handler passed it to ctx.advance(), from ${entity.applied.dedupeKey}.`
          : "No version applied yet.",
      ),
      table(
        ["Received", "Event id", "Type", "Version in the event", "Status", "Outcome"],
        entity.events.map((e) => [
          when(e.receivedAt),
          eventLink(e.source, e.dedupeKey),
          e.type,
          e.version ?? "–",
          badge(e.status),
          e.outcome ?? "",
        ]),
      ),
    );
  }
}

start().catch(showError);
