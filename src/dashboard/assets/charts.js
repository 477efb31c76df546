// Line charts as inline SVG, drawn from the health API's buckets. Each chart has a text summary for screen readers
// and a table of its numbers behind a disclosure.
import { h } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const svg = (tag, attrs = {}) => {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  return element;
};

/**
 * A figure with one line per series over time. `series`: [{ name, color, values: number|null per point }];
 * `format` turns a value into text.
 */
export function lineChart(title, times, series, format = (v) => String(Math.round(v))) {
  const width = 560;
  const height = 200;
  const pad = { left: 64, right: 10, top: 12, bottom: 28 };
  const all = series.flatMap((s) => s.values).filter((v) => v !== null && Number.isFinite(v));
  const max = Math.max(1e-9, ...all) * 1.1;
  const x = (i) => pad.left + (i * (width - pad.left - pad.right)) / Math.max(1, times.length - 1);
  const y = (v) => height - pad.bottom - (v / max) * (height - pad.top - pad.bottom);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  const label = `${title}: ${series
    .map(
      (s) =>
        `${s.name} latest ${format(lastOf(s.values) ?? 0)}, peak ${format(Math.max(0, ...s.values.filter((v) => v !== null)))}`,
    )
    .join("; ")}`;
  chart.setAttribute("aria-label", label);
  for (const fraction of [0, 0.5, 1]) {
    const value = (max / 1.1) * fraction;
    chart.append(
      svg("line", { x1: pad.left, x2: width - pad.right, y1: y(value), y2: y(value), stroke: "#e2e2dd" }),
    );
    const text = svg("text", { x: pad.left - 6, y: y(value) + 5, "text-anchor": "end" });
    text.textContent = format(value);
    chart.append(text);
  }
  for (const i of [0, Math.floor((times.length - 1) / 2), times.length - 1]) {
    if (times[i] === undefined) continue;
    const anchor = i === 0 ? "start" : i === times.length - 1 ? "end" : "middle";
    const text = svg("text", { x: x(i), y: height - 6, "text-anchor": anchor });
    text.textContent = new Date(times[i]).toLocaleTimeString(undefined, {
      hour: "2-digit",
      minute: "2-digit",
    });
    chart.append(text);
  }
  for (const s of series) {
    let d = "";
    s.values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      d += `${d === "" || s.values[i - 1] === null ? "M" : "L"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    chart.append(
      svg("path", { d, fill: "none", stroke: s.color, "stroke-width": 2, "stroke-linejoin": "round" }),
    );
    // A point with no neighbour draws no line: a dot shows it.
    s.values.forEach((v, i) => {
      const alone = (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null;
      if (v !== null && Number.isFinite(v) && alone) {
        chart.append(svg("circle", { cx: x(i), cy: y(v), r: 3, fill: s.color }));
      }
    });
  }
  const legend = h(
    "div",
    { className: "legend" },
    series.map((s) => h("span", {}, swatch(s.color), s.name)),
  );
  const table = h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "time"),
        series.map((s) => h("th", { scope: "col" }, s.name)),
      ),
    ),
    h(
      "tbody",
      {},
      times.map((t, i) =>
        h(
          "tr",
          {},
          h("td", {}, new Date(t).toLocaleTimeString()),
          series.map((s) => h("td", {}, s.values[i] === null ? "–" : format(s.values[i]))),
        ),
      ),
    ),
  );
  return h(
    "figure",
    {},
    h("figcaption", {}, title),
    chart,
    legend,
    h("details", {}, h("summary", {}, "Numbers"), table),
  );
}

// An SVG stroke, not a style attribute: the page's Content-Security-Policy allows no inline styles.
function swatch(color) {
  const mark = svg("svg", { width: 14, height: 6, "aria-hidden": "true" });
  mark.append(svg("line", { x1: 0, x2: 14, y1: 3, y2: 3, stroke: color, "stroke-width": 3 }));
  return mark;
}

function lastOf(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return undefined;
}
