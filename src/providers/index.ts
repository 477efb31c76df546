import type { ProviderName } from "../config/types.js";
import { type AwardeeOptions, awardeeProvider } from "./awardee.js";
import { githubProvider } from "./github.js";
import { standardProvider } from "./standard.js";
import { stripeProvider } from "./stripe.js";
import type { Provider } from "./types.js";

/**
 * Builds a provider by name with a source's options.
 *
 * @example
 * createProvider("stripe", { toleranceSeconds: 300 });
 */
export function createProvider(
  name: ProviderName,
  options: { toleranceSeconds: number; awardee?: AwardeeOptions },
): Provider {
  switch (name) {
    case "stripe":
      return stripeProvider({ toleranceSeconds: options.toleranceSeconds });
    case "github":
      return githubProvider();
    case "standard":
      return standardProvider({ toleranceSeconds: options.toleranceSeconds });
    case "awardee":
      return awardeeProvider({ toleranceSeconds: options.toleranceSeconds, ...options.awardee });
  }
}
