import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Why the browser tests are skipped, when HOOKLEDGER_SKIP_BROWSER=1 asks for it; otherwise `false`. */
export const browserSkipped =
  process.env.HOOKLEDGER_SKIP_BROWSER === "1" &&
  "HOOKLEDGER_SKIP_BROWSER=1: the dashboard is NOT tested in a browser; unset it and install chromium";

const executable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/**
 * The Chromium the browser tests drive: HOOKLEDGER_CHROMIUM, else Debian's /usr/bin/chromium, else `chromium` on
 * PATH. Throws naming the fix when there is none: a skipped browser test would hide a broken dashboard.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  const named = env.HOOKLEDGER_CHROMIUM;
  if (named) {
    if (executable(named)) return named;
    throw new Error(`HOOKLEDGER_CHROMIUM=${named} is not an executable file; point it at a Chromium binary`);
  }
  const onPath = (env.PATH ?? "").split(":").map((dir) => join(dir, "chromium"));
  const found = ["/usr/bin/chromium", ...onPath].find(executable);
  if (found) return found;
  throw new Error(
    "no Chromium for the dashboard's browser tests: install Debian's package (sudo apt-get install chromium; " +
      "npm test does as root or with password-less sudo), or set HOOKLEDGER_CHROMIUM to a Chromium binary; " +
      "HOOKLEDGER_SKIP_BROWSER=1 skips them",
  );
}

/**
 * Starts headless Chromium through playwright-core.
 *
 * @example
 * const browser = await launchChromium(); after(() => browser.close());
 */
export function launchChromium(): Promise<Browser> {
  // Chromium refuses to start its sandbox as root (CI containers); the pages it opens are the test's own.
  return chromium.launch({ executablePath: findChromium(), args: ["--no-sandbox"] });
}

/**
 * Collects what a page reports as broken: console errors (a CSP violation is one) and uncaught exceptions.
 * `expected` drops console errors the test causes on purpose, such as the 401 of a refused sign-in.
 */
export function watchPage(page: Page, expected?: RegExp): { problems: string[] } {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const text = `console error at ${message.location().url}: ${message.text()}`;
    if (!expected?.test(text)) problems.push(text);
  });
  page.on("pageerror", (error) => problems.push(`uncaught in the page: ${error.message}`));
  return { problems };
}
