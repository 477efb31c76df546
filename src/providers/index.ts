import type { ProviderName } from "../config/types.js";
import { type AwardeeOptions, awardeeProvider } from "./awardee.js";
import { type GenericOptions, genericProvider } from "./generic.js";
import { githubProvider } from "./github.js";
import { paddleProvider } from "./paddle.js";
import { shopifyProvider } from "./shopify.js";
import { slackProvider } from "./slack.js";
import { standardProvider } from "./standard.js";
import { stripeProvider } from "./stripe.js";
import type { Provider } from "./types.js";

/** A source's provider settings, as {@link createProvider} takes them. */
export interface ProviderSettings {
  /** The source's window; unset, each provider's own default applies (Paddle 5 s, the others 300 s). */
  readonly toleranceSeconds?: number;
  /** Options of the `awardee` provider. */
  readonly awardee?: AwardeeOptions;
  /** Options of the `generic` provider: required for it. */
  readonly generic?: GenericOptions;
}

/**
 * Builds a provider by name with a source's settings.
 *
 * @throws TypeError for `generic` without usable options (`resolveConfig` reports those first).
 * @example
 * createProvider("stripe", { toleranceSeconds: 300 });
 * createProvider("paddle", {}); // 5 s window
 */
export function createProvider(name: ProviderName, settings: ProviderSettings = {}): Provider {
  const tolerance =
    settings.toleranceSeconds === undefined ? {} : { toleranceSeconds: settings.toleranceSeconds };
  switch (name) {
    case "stripe":
      return stripeProvider(tolerance);
    case "github":
      return githubProvider();
    case "standard":
      return standardProvider(tolerance);
    case "awardee":
      return awardeeProvider({ ...tolerance, ...settings.awardee });
    case "shopify":
      return shopifyProvider();
    case "paddle":
      return paddleProvider(tolerance);
    case "slack":
      return slackProvider(tolerance);
    case "generic":
      if (!settings.generic) throw new TypeError("the generic provider needs its options");
      return genericProvider({ ...tolerance, ...settings.generic });
  }
}
