// Matching a delivery's path to its source: the node adapter's matcher works its prefixes out once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pathOf, routeFromPath, routeMatcher, sourceFromPath } from "../../src/edge/route.js";

test("routeMatcher: a source under the delivery or the replay path, one trailing slash allowed, decoded", () => {
  const route = routeMatcher("/webhooks/", "/replay");
  assert.deepEqual(route("/webhooks/stripe"), { source: "stripe", viaReplay: false });
  assert.deepEqual(route("/webhooks/stripe/"), { source: "stripe", viaReplay: false });
  assert.deepEqual(route("/replay/stripe"), { source: "stripe", viaReplay: true });
  assert.deepEqual(route("/webhooks/shop%20eu"), { source: "shop eu", viaReplay: false });
  for (const path of [
    "/webhooks",
    "/webhooks/",
    "/webhooks//",
    "/webhooks/a/b",
    "/webhooksx/a",
    "/",
    "/%zz",
  ]) {
    assert.equal(route(path), undefined, path);
  }
  assert.equal(route("/webhooks/%zz"), undefined, "an undecodable name is no source");
  assert.deepEqual(routeFromPath("/replay/github", "/webhooks", "/replay"), {
    source: "github",
    viaReplay: true,
  });
  assert.equal(sourceFromPath("/hooks/acme", "/hooks"), "acme");
});

test("pathOf: the request target without its query string", () => {
  assert.equal(pathOf("/webhooks/stripe?x=1&y=2"), "/webhooks/stripe");
  assert.equal(pathOf("/webhooks/stripe"), "/webhooks/stripe");
  assert.equal(pathOf(undefined), "/");
  assert.equal(pathOf("?x"), "");
});
