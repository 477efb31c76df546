import assert from "node:assert/strict";
import { test } from "node:test";
import { databaseAddress } from "../../src/db/wait.js";
import { parseHostList } from "../../src/db/hosts.js";

test("parseHostList splits a libpq host list and keeps one host and the other parameters for pg", () => {
  assert.deepEqual(
    parseHostList(
      "postgres://app:s%40cret@db1:5432,db2:5433,[::1]/shop?sslmode=disable&target_session_attrs=read-write",
    ),
    {
      hosts: [
        { host: "db1", port: 5432 },
        { host: "db2", port: 5433 },
        { host: "::1", port: 5432 },
      ],
      target: "read-write",
      url: "postgres://app:s%40cret@db1:5432/shop?sslmode=disable",
    },
  );
});

test("parseHostList leaves a single-host URL to pg, and reads target_session_attrs on one host", () => {
  assert.equal(parseHostList("postgres://app@db1:5432/shop"), undefined);
  assert.equal(parseHostList("postgresql://localhost/shop?sslmode=require"), undefined);
  assert.deepEqual(parseHostList("postgres://db1/shop?target_session_attrs=standby")?.target, "standby");
});

test("parseHostList refuses an unknown target_session_attrs and an empty host, naming them", () => {
  assert.throws(
    () => parseHostList("postgres://db1,db2/shop?target_session_attrs=writable"),
    /target_session_attrs: expected one of any, read-write, read-only, primary, standby, prefer-standby, got "writable"/,
  );
  assert.throws(() => parseHostList("postgres://db1,,db2/shop"), /empty or malformed host: ""/);
});

test("databaseAddress names every host of a list, never the user or password", () => {
  assert.equal(databaseAddress("postgres://app:secret@db1,db2:5433/shop"), "db1:5432,db2:5433/shop");
  assert.equal(databaseAddress("postgres://app:secret@db:5432/shop"), "db:5432/shop");
});
