import type { AwardeeOptions } from "../providers/awardee.js";
import { genericOptionProblems } from "../providers/generic-check.js";
import type { GenericOptions } from "../providers/generic-options.js";
import { type FieldsOf, knownOnly } from "./fields.js";
import type { SourceConfig } from "./types.js";

/** The fields of a source's `awardee` options (see `unknownFields`). */
export const AWARDEE_FIELDS = {
  signatureHeader: true,
  algorithm: true,
  encoding: true,
  prefix: true,
  timestampHeader: true,
  toleranceSeconds: true,
  versionField: true,
  entityType: true,
  entityIdField: true,
} satisfies FieldsOf<AwardeeOptions>;

/** The fields of a source's `generic` options (see `unknownFields`). */
export const GENERIC_FIELDS = {
  signatureHeader: true,
  algorithm: true,
  encoding: true,
  prefix: true,
  timestampHeader: true,
  signedTemplate: true,
  toleranceSeconds: true,
  idHeader: true,
  idPointer: true,
  stableFields: true,
  typeHeader: true,
  typePointer: true,
  versionPointer: true,
  entityType: true,
  entityTypePointer: true,
  entityIdPointer: true,
} satisfies FieldsOf<GenericOptions>;

/**
 * Checks a source's provider-specific options: problems refuse the configuration, warnings are legal but risky
 * choices the service logs at start. Every message names the field and the fix.
 *
 * @example
 * providerOptionChecks("sources[0]", { name: "acme", provider: "generic", secrets: ["s"] });
 * // { problems: ["sources[0].generic: the generic provider needs its options, e.g. …"], warnings: [] }
 */
export function providerOptionChecks(
  at: string,
  source: SourceConfig,
): { problems: string[]; warnings: string[] } {
  const problems = source.awardee ? awardeeProblems(`${at}.awardee`, source.awardee) : [];
  const generic = genericCheck(at, source);
  return { problems: [...problems, ...generic.problems], warnings: generic.warnings };
}

const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

function awardeeProblems(at: string, options: AwardeeOptions): string[] {
  const problems: string[] = [];
  for (const field of ["signatureHeader", "timestampHeader"] as const) {
    const value = options[field];
    if (value !== undefined && !HEADER.test(value)) {
      problems.push(`${at}.${field}: ${JSON.stringify(value)} is not a valid header name`);
    }
  }
  if (options.algorithm !== undefined && !["sha256", "sha512"].includes(options.algorithm)) {
    problems.push(`${at}.algorithm: use "sha256" or "sha512", got ${JSON.stringify(options.algorithm)}`);
  }
  if (options.encoding !== undefined && !["hex", "base64"].includes(options.encoding)) {
    problems.push(`${at}.encoding: use "hex" or "base64", got ${JSON.stringify(options.encoding)}`);
  }
  return problems;
}

function genericCheck(at: string, source: SourceConfig): { problems: string[]; warnings: string[] } {
  const options = source.generic;
  if (source.provider !== "generic") {
    const problems = options
      ? [`${at}.generic: only a source with provider "generic" takes these options`]
      : [];
    return { problems, warnings: [] };
  }
  if (!options || typeof options !== "object") {
    const example = `{ signatureHeader: "x-signature", algorithm: "sha256", encoding: "hex", idPointer: "/id", typePointer: "/type" }`;
    return {
      problems: [`${at}.generic: the generic provider needs its options, e.g. ${example}`],
      warnings: [],
    };
  }
  const warnings = options.stableFields
    ? [
        `${at}.generic.stableFields: events are deduplicated by a hash of ${options.stableFields.join(", ")} (last resort); two events with equal values there are one event, so prefer idHeader or idPointer if the sender has an id`,
      ]
    : [];
  // Unknown fields are reported once, by `unknownFields`, in the words used at every depth of the configuration.
  return { problems: genericOptionProblems(`${at}.generic`, knownOnly(options, GENERIC_FIELDS)), warnings };
}
