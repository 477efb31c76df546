// The outbox view: the messages handlers sent with ctx.outbox.send and the forwards of forward mode, dead ones
// retried (each retry recorded), the forward destinations' state, and one message with its payload, last answer
// and, for a forward, each delivery attempt (docs/outbox.md, docs/forwarding.md).
import { badge, confirmAction, eventLink, get, h, post, when } from "./dom.js";
import { filterForm, table } from "./list.js";

const OUTBOX_FILTERS = [
  ["status", "Status", ["", "pending", "sent", "dead", "stale"]],
  ["source", "Source", "text"],
  ["sender", "Sender", "text"],
];

const messageLink = (key) =>
  h("a", { href: `#/outbox-message/${encodeURIComponent(key)}`, className: "mono" }, key);

/** The newest messages matching the filter, with their attempts and last error; dead ones can be retried. */
export async function outboxView(main, query) {
  const params = Object.fromEntries(query);
  const [{ messages }, { destinations }] = await Promise.all([get("outbox", params), get("forwards")]);
  main.append(h("h1", {}, "Outbox"));
  if (destinations.length > 0) main.append(destinationsPanel(destinations));
  main.append(filterForm(query, "outbox", OUTBOX_FILTERS));
  const note = h("p", { role: "status" });
  const rows = messages.map((m) => [
    m.status === "dead"
      ? h("input", {
          type: "checkbox",
          "aria-label": `Select ${m.idempotencyKey}`,
          "data-key": m.idempotencyKey,
        })
      : "",
    when(m.createdAt),
    eventLink(m.source, m.eventId, `${m.source} ${m.eventId}`),
    m.sender,
    messageLink(m.idempotencyKey),
    badge(m.status),
    String(m.attempts),
    m.lastStatus === null ? "–" : String(m.lastStatus),
    h("span", { className: "error" }, m.lastError ?? ""),
  ]);
  const list = table(
    ["", "Written", "Event", "Sender", "Idempotency key", "Status", "Attempts", "Last HTTP", "Last error"],
    rows,
  );
  list.setAttribute("aria-label", "Outbox messages");
  const holder = h("div", {}, list);
  const retry = h("button", { type: "button" }, "Retry selected");
  retry.addEventListener("click", async () => {
    const keys = [...holder.querySelectorAll("input[type=checkbox]:checked")].map((box) => box.dataset.key);
    if (keys.length === 0) {
      note.textContent = "Select dead messages first.";
      return;
    }
    const text = "Each is sent again now, under the same idempotency key. This is recorded under your name.";
    if (!(await confirmAction(`Retry ${keys.length} message${keys.length === 1 ? "" : "s"}?`, text, "Retry")))
      return;
    const { retried } = await post("outbox-retry", { keys });
    note.textContent = `Retried ${retried.length} of ${keys.length}.`;
    reload();
  });
  const retryAll = h("button", { type: "button", className: "secondary" }, "Retry all dead matching");
  retryAll.addEventListener("click", async () => {
    const filter = Object.fromEntries(
      Object.entries({ source: params.source, sender: params.sender }).filter(([, v]) => v),
    );
    const scope =
      Object.entries(filter)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") || "every source and sender";
    const text = `Every dead message of ${scope} is sent again now. This is recorded under your name.`;
    if (!(await confirmAction("Retry all dead messages?", text, "Retry all"))) return;
    const { retried } = await post("outbox-retry", { filter });
    note.textContent = `Retried ${retried.length} dead message${retried.length === 1 ? "" : "s"}.`;
    reload();
  });
  main.append(h("div", { className: "toolbar" }, retry, retryAll), note, holder);
  if (messages.length === 200)
    main.append(h("p", { className: "muted" }, "The newest 200; narrow the filter for more."));
  return undefined;
}

/** Each forwarding source's destination: enabled, disabled by a 410 (until the CLI re-enables it) or paused. */
function destinationsPanel(destinations) {
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const state = (d) => {
    if (d.disabledAt)
      return [
        h(
          "strong",
          {},
          `disabled since ${when(d.disabledAt)}`,
          d.disabledReason ? `: ${d.disabledReason}` : "",
        ),
        h(
          "div",
          { className: "muted" },
          "re-enable with: ",
          h("code", {}, `hookledger forward enable ${d.source}`),
        ),
      ];
    if (d.pausedUntil) return `paused until ${when(d.pausedUntil)} after ${plural(d.failures, "failure")}`;
    return d.failures > 0 ? `enabled, ${plural(d.failures, "failure")} in a row` : "enabled";
  };
  const head = ["Source", "State", "Pending", "Dead", "Sent"];
  return h(
    "section",
    { "aria-labelledby": "forward-destinations" },
    h("h2", { id: "forward-destinations" }, "Forward destinations"),
    h(
      "table",
      { "aria-label": "Forward destinations" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          head.map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      h(
        "tbody",
        {},
        destinations.map((d) =>
          h(
            "tr",
            { className: d.disabledAt ? "disabled" : d.pausedUntil ? "paused" : "" },
            h("td", {}, d.source),
            h("td", {}, state(d)),
            h("td", {}, String(d.pending)),
            h("td", {}, String(d.dead)),
            h("td", {}, String(d.sent)),
          ),
        ),
      ),
    ),
  );
}

/** A forward's delivery attempts, oldest first: what the destination answered and how fast. */
function attemptsTable(attempts) {
  const list = table(
    ["#", "Time", "Status", "Latency ms", "Error", "Response snippet"],
    attempts.map((a) => [
      String(a.attempt),
      when(a.at),
      a.status === null ? "no answer" : String(a.status),
      String(a.ms),
      a.error ? h("span", { className: "error" }, a.error) : "",
      a.snippet ? h("code", { className: "snippet" }, a.snippet) : "",
    ]),
  );
  list.setAttribute("aria-label", "Delivery attempts");
  return list;
}

/** One message: where it comes from, its attempts, its last answer and its payload. */
export async function outboxMessageView(main, key) {
  const { message: m, attempts } = await get("outbox-message", { key });
  const facts = [
    ["Idempotency key", h("code", {}, m.idempotencyKey)],
    ["Event", eventLink(m.source, m.eventId, `${m.source} ${m.eventId}`)],
    ["Position or key", m.key],
    ["Sender", m.sender],
    ["Status", badge(m.status)],
    ["Attempts", String(m.attempts)],
    ["Written", when(m.createdAt)],
    ["Sent", when(m.sentAt) || "–"],
    ["Next attempt", m.status === "pending" ? when(m.nextAttemptAt) : "–"],
    ["Last HTTP status", m.lastStatus === null ? "–" : String(m.lastStatus)],
    ["Last error", m.lastError ? h("span", { className: "error" }, m.lastError) : "–"],
  ];
  main.append(
    h("p", {}, h("a", { href: "#/outbox" }, "← Outbox")),
    h("h1", {}, `${m.sender} `, h("span", { className: "mono" }, m.idempotencyKey)),
    h(
      "dl",
      { className: "facts" },
      facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
    ),
    ...(Array.isArray(attempts) ? [h("h2", {}, "Delivery attempts"), attemptsTable(attempts)] : []),
    h("h2", {}, "Payload"),
    h("pre", { tabindex: "0", "aria-label": "Payload" }, JSON.stringify(m.payload, null, 2)),
  );
}

function reload() {
  setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 300);
}
