/**
 * An optional peer dependency that is not installed. The message names the feature that needs it and the command
 * that installs it; the CLI prints it as one line.
 *
 * @example
 * try {
 *   await replayStripe(options);
 * } catch (error) {
 *   if (error instanceof MissingPackageError) console.error(error.message); // "… needs the stripe package: npm install stripe"
 * }
 */
export class MissingPackageError extends Error {
  constructor(
    /** The package to install, e.g. `"stripe"`. */
    readonly packageName: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "MissingPackageError";
  }
}

/** What to say when an optional package is missing: the feature that needs it, or the whole message. */
export type MissingPackageHint = { readonly feature: string } | { readonly message: string };

/**
 * Loads an optional peer dependency on first use (`load` is the literal `() => import("pkg")`, so the types follow
 * the package). When the package itself is not installed, throws a {@link MissingPackageError} naming the install
 * command; any other failure (a broken install, a missing dependency of the package) is rethrown as it is.
 *
 * @example
 * const { default: Stripe } = await importOptional("stripe", () => import("stripe"), { feature: "replay stripe" });
 */
export async function importOptional<T>(
  packageName: string,
  load: () => Promise<T>,
  hint: MissingPackageHint,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isMissing(error, packageName)) throw error;
    const message =
      "message" in hint
        ? hint.message
        : `${hint.feature} needs the ${packageName} package: npm install ${packageName}`;
    throw new MissingPackageError(packageName, message, { cause: error });
  }
}

// Node's resolver says "Cannot find package 'stripe' imported from …"; a dependency of the package missing names
// that dependency instead, and is not the user's missing peer.
function isMissing(error: unknown, packageName: string): boolean {
  const { code, message } = error as NodeJS.ErrnoException;
  return (
    code === "ERR_MODULE_NOT_FOUND" && typeof message === "string" && message.includes(`'${packageName}'`)
  );
}
