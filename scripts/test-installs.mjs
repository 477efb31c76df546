// The Debian packages the test suites need, installed by scripts/test.mjs when they are missing: as root, or with
// password-less sudo, through apt-get; otherwise the run says which command fixes it. Types: test-installs.d.mts.
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { join } from "node:path";

const executable = (path) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The first executable `name` in `env.PATH`, the way a shell's `command -v` finds it. */
export const onPath = (name, env = process.env) =>
  (env.PATH ?? "")
    .split(":")
    .filter((dir) => dir !== "")
    .map((dir) => join(dir, name))
    .find(executable);

/**
 * Runs argv to its end; `out` holds stdout and stderr interleaved. Never throws: a command that cannot start is
 * `{ ok: false }` with the reason as `out`.
 */
export function run(argv, { env = process.env, input } = {}) {
  return new Promise((resolve) => {
    const [command = "", ...args] = argv;
    const child = spawn(command, args, {
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let out = "";
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => (out += chunk));
    child.on("error", (error) => resolve({ ok: false, out: error.message, stdout }));
    child.on("close", (code) => resolve({ ok: code === 0, out, stdout }));
    if (input !== undefined) child.stdin.end(input);
  });
}

/** The first line a binary prints for `--version`, or undefined when it does not run. */
export async function versionOf(path, env = process.env) {
  // stdout first: Debian's chromium wrapper prints a shell warning on stderr before its version.
  const { ok, out, stdout } = await run([path, "--version"], { env });
  return ok ? (stdout.trim() || out.trim()).split("\n")[0] : undefined;
}

/** The prefix that runs a command as root: [] as root, ["sudo", "-n"] with password-less sudo, else undefined. */
export async function rootPrefix({ uid = process.getuid?.(), env = process.env } = {}) {
  if (uid === 0) return [];
  return (await run(["sudo", "-n", "true"], { env })).ok ? ["sudo", "-n"] : undefined;
}

const POLICY = "/usr/sbin/policy-rc.d";

/**
 * `apt-get install` of one Debian package, with `apt-get update` and a second try when the first fails (a stale or
 * empty package list). With `service`, the package's own server must not keep running: a policy-rc.d that denies
 * every start covers the install (one already there is left as it is), and a server that started anyway is stopped
 * and disabled.
 */
export async function aptInstall(pkg, { root, env = process.env, service }) {
  const asRoot = (argv, options) => run([...root, ...argv], { env, ...options });
  let added = false;
  if (service && !existsSync(POLICY)) {
    added = (await asRoot(["tee", POLICY], { input: "#!/bin/sh\nexit 101\n" })).ok;
    if (added) await asRoot(["chmod", "755", POLICY]);
  }
  // sudo resets the environment, so the variable goes through env(1); as root it is set on the child directly.
  const aptEnv = { ...env, DEBIAN_FRONTEND: "noninteractive" };
  const apt = root.length > 0 ? [...root, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"] : ["apt-get"];
  const install = () => run([...apt, "install", "-y", "-q", "--no-install-recommends", pkg], { env: aptEnv });
  let result = await install();
  try {
    if (!result.ok) {
      const update = await run([...apt, "update", "-q"], { env: aptEnv });
      result = update.ok ? await install() : update;
    }
  } finally {
    if (added) await asRoot(["rm", "-f", POLICY]);
  }
  if (result.ok && service) {
    if (existsSync("/run/systemd/system")) {
      await asRoot(["systemctl", "disable", "--now", service]);
    } else if (executable(`/etc/init.d/${service}`)) {
      await asRoot([`/etc/init.d/${service}`, "stop"]);
      await asRoot(["update-rc.d", service, "disable"]);
    }
  }
  return result;
}

const lastLines = (out) => out.trim().split("\n").slice(-3).join(" | ");

/**
 * Installs Debian's `pkg` when `binary` is missing and this user can (root or password-less sudo, apt-get on
 * PATH). Says so once and the version after; returns the binary's path and version, or why it is not there.
 */
export async function ensureDebianBinary(
  binary,
  pkg,
  { env = process.env, uid, log = console.log, service } = {},
) {
  const found = onPath(binary, env);
  if (found) return { path: found, version: await versionOf(found, env), installed: false };
  const root = await rootPrefix({ uid, env });
  if (!root)
    return { missing: `${binary} is missing, and this user is neither root nor has password-less sudo` };
  if (!onPath("apt-get", env))
    return { missing: `${binary} is missing, and there is no apt-get to install it` };
  log(`${binary} is missing: installing Debian's ${pkg} (apt-get install ${pkg})…`);
  const result = await aptInstall(pkg, { root, env, ...(service ? { service } : {}) });
  const path = onPath(binary, env);
  if (!result.ok || !path) {
    return { missing: `apt-get install ${pkg} failed${result.ok ? "" : `: ${lastLines(result.out)}`}` };
  }
  const version = await versionOf(path, env);
  log(`installed ${pkg}: ${path} ${version ?? "(no --version)"}`);
  return { path, version, installed: true };
}

const CHROMIUM_FIX =
  "run `sudo apt-get install chromium`, or set HOOKLEDGER_CHROMIUM to a Chromium binary, or HOOKLEDGER_SKIP_BROWSER=1 " +
  "to skip the dashboard's browser test on purpose";

/**
 * The Chromium the browser test will drive, found as test/helpers/browser.ts finds it (HOOKLEDGER_CHROMIUM, then
 * `systemPath`, then PATH), else installed from Debian. A missing browser fails the run at its start, naming the
 * fix, rather than ten minutes later in the browser test: a skipped browser test would hide a broken dashboard.
 *
 * @returns `{ path, version }`, `{ skipped }` under HOOKLEDGER_SKIP_BROWSER=1, or `{ error }` naming the fix.
 */
export async function testChromium({
  env = process.env,
  uid = process.getuid?.(),
  log = console.log,
  systemPath = "/usr/bin/chromium",
} = {}) {
  if (env.HOOKLEDGER_SKIP_BROWSER === "1") return { skipped: "HOOKLEDGER_SKIP_BROWSER=1" };
  const named = env.HOOKLEDGER_CHROMIUM;
  if (named) {
    const version = executable(named) ? await versionOf(named, env) : undefined;
    if (version) return { path: named, version };
    return {
      error: `HOOKLEDGER_CHROMIUM=${named} does not run \`--version\`: point it at a Chromium binary`,
    };
  }
  const find = () => (executable(systemPath) ? systemPath : onPath("chromium", env));
  let path = find();
  const installing = !path;
  if (installing) {
    const root = await rootPrefix({ uid, env });
    if (!root || !onPath("apt-get", env)) {
      const why = root ? "there is no apt-get" : "this user is neither root nor has password-less sudo";
      return { error: `chromium is missing for the dashboard's browser test, and ${why}: ${CHROMIUM_FIX}` };
    }
    log("chromium is missing: installing Debian's chromium (apt-get install chromium)…");
    const result = await aptInstall("chromium", { root, env });
    path = find();
    if (!path) {
      const why = result.ok ? "it installed no chromium" : lastLines(result.out);
      return { error: `apt-get install chromium failed (${why}): ${CHROMIUM_FIX}` };
    }
  }
  const version = await versionOf(path, env);
  if (!version) return { error: `${path} does not run \`--version\`: ${CHROMIUM_FIX}` };
  if (installing) log(`installed chromium: ${path} ${version}`);
  return { path, version };
}
