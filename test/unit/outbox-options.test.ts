import assert from "node:assert/strict";
import { test } from "node:test";
import { httpSender, Outbox } from "hookledger";
import { refusedAddress } from "../../src/outbound/address.js";

test("refusedAddress refuses link-local and metadata addresses in every spelling that reaches them", () => {
  for (const address of [
    "169.254.169.254",
    "169.254.0.1",
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "::169.254.169.254",
    "64:ff9b::169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "fe80::1",
    "febf::1",
    "fd00:ec2::254",
    "FD00:EC2:0:0:0:0:0:254",
  ]) {
    assert.ok(refusedAddress(address), `${address} is refused`);
  }
});

test("refusedAddress allows loopback, private and public addresses, and names (checked after DNS)", () => {
  for (const address of [
    "127.0.0.1",
    "10.0.0.5",
    "192.168.1.1",
    "169.255.0.1",
    "::1",
    "::ffff:10.0.0.5",
    "fd00:ec2::253",
    "fec0::1",
    "2001:db8::1",
    "metadata.google.internal",
  ]) {
    assert.equal(refusedAddress(address), undefined, `${address} is allowed`);
  }
});

test("new Outbox refuses an unknown option, at any depth, naming it and the closest known name", () => {
  assert.throws(
    () => new Outbox({ concurency: 4 } as never),
    /new Outbox\(options\)\.concurency: unknown field; did you mean concurrency\?/,
  );
  assert.throws(
    () => new Outbox({ retry: { maxAttempt: 3 } } as never),
    /new Outbox\(options\)\.retry\.maxAttempt: unknown field; did you mean maxAttempts\?/,
  );
  assert.throws(() => new Outbox({ timeoutMs: 0 }), /timeoutMs must be a positive number/);
  assert.throws(() => new Outbox({ concurrency: 1.5 }), /concurrency must be a positive integer/);
});

test("httpSender refuses a URL that is not http(s) and an unknown option, at once", () => {
  assert.throws(() => httpSender({ url: "ftp://files.example/" }), /expected an http:\/\/ or https:\/\/ URL/);
  assert.throws(() => httpSender({ url: "crm.internal/hooks" }), /expected an http:\/\/ or https:\/\/ URL/);
  assert.throws(
    () => httpSender({ url: "https://crm.example/", timeout: 5 } as never),
    /httpSender\(options\)\.timeout: unknown field; did you mean timeoutMs\?/,
  );
});

test("Outbox.on refuses a second sender of one name, http, which is built in, and forward, forward mode's", () => {
  const outbox = new Outbox().on("email", () => {});
  assert.throws(() => outbox.on("email", () => {}), /already registered/);
  assert.throws(() => outbox.on("http", () => {}), /already registered/);
  assert.throws(() => outbox.on("forward", () => {}), /sender name forward is reserved for forward mode/);
  assert.deepEqual(outbox.senders(), ["http", "email"]);
});
