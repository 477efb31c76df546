import { compileTemplate, type GenericOptions, HEADER_NAME } from "./generic-options.js";
import { parsePointer } from "./json-pointer.js";

const KNOWN: readonly (keyof GenericOptions)[] = [
  "signatureHeader",
  "algorithm",
  "encoding",
  "prefix",
  "timestampHeader",
  "signedTemplate",
  "toleranceSeconds",
  "idHeader",
  "idPointer",
  "stableFields",
  "typeHeader",
  "typePointer",
  "versionPointer",
  "entityType",
  "entityTypePointer",
  "entityIdPointer",
];

/**
 * Every problem with a set of generic options, each naming the field (under `at`) and the fix; empty when they
 * are usable.
 *
 * @example
 * genericOptionProblems("sources[0].generic", { signatureHeader: "x-sig", algorithm: "sha256", encoding: "hex" });
 * // ["sources[0].generic: configure exactly one id strategy: idHeader, idPointer or stableFields (last resort)", …]
 */
export function genericOptionProblems(at: string, options: GenericOptions): string[] {
  const problems: string[] = [];
  const o = options as unknown as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!(KNOWN as readonly string[]).includes(key))
      problems.push(`${at}.${key}: unknown option; the options are ${KNOWN.join(", ")}`);
  }
  const header = (field: string, required = false) => {
    const value = o[field];
    if (value === undefined && !required) return;
    if (typeof value !== "string" || !HEADER_NAME.test(value))
      problems.push(`${at}.${field}: set a header name such as "x-signature", got ${JSON.stringify(value)}`);
  };
  const pointer = (field: string, value: unknown = o[field]) => {
    if (value !== undefined && (typeof value !== "string" || parsePointer(value) === null))
      problems.push(`${at}.${field}: use a JSON pointer such as "/data/id", got ${JSON.stringify(value)}`);
  };
  header("signatureHeader", true);
  for (const field of ["timestampHeader", "idHeader", "typeHeader"]) header(field);
  for (const field of ["idPointer", "typePointer", "versionPointer", "entityTypePointer", "entityIdPointer"])
    pointer(field);
  if (o.algorithm !== "sha256" && o.algorithm !== "sha512")
    problems.push(`${at}.algorithm: use "sha256" or "sha512", got ${JSON.stringify(o.algorithm)}`);
  if (o.encoding !== "hex" && o.encoding !== "base64")
    problems.push(`${at}.encoding: use "hex" or "base64", got ${JSON.stringify(o.encoding)}`);
  if (o.prefix !== undefined && typeof o.prefix !== "string")
    problems.push(`${at}.prefix: expected text such as "sha256=", got ${JSON.stringify(o.prefix)}`);
  if (o.entityType !== undefined && (typeof o.entityType !== "string" || o.entityType === ""))
    problems.push(`${at}.entityType: expected a name such as "order", got ${JSON.stringify(o.entityType)}`);
  const tolerance = o.toleranceSeconds;
  if (
    tolerance !== undefined &&
    !(typeof tolerance === "number" && Number.isInteger(tolerance) && tolerance > 0)
  )
    problems.push(
      `${at}.toleranceSeconds: expected a positive whole number, got ${JSON.stringify(tolerance)}`,
    );
  const stable = o.stableFields;
  if (stable !== undefined && (!Array.isArray(stable) || stable.length === 0))
    problems.push(`${at}.stableFields: list at least one JSON pointer, e.g. ["/object/id", "/action"]`);
  else if (Array.isArray(stable))
    for (const [i, value] of stable.entries()) pointer(`stableFields[${i}]`, value);
  problems.push(...templateProblems(at, options));
  const count = (...fields: string[]) => fields.filter((f) => o[f] !== undefined).length;
  if (count("idHeader", "idPointer", "stableFields") !== 1)
    problems.push(
      `${at}: configure exactly one id strategy: idHeader, idPointer or stableFields (last resort)`,
    );
  if (count("typeHeader", "typePointer") !== 1)
    problems.push(`${at}: configure exactly one of typeHeader or typePointer for the event type`);
  const entityFields = count("entityType", "entityTypePointer", "entityIdPointer");
  if (
    entityFields > 0 &&
    (count("entityType", "entityTypePointer") !== 1 || !o.entityIdPointer || !o.versionPointer)
  )
    problems.push(
      `${at}: an entity needs entityIdPointer, versionPointer and exactly one of entityType or entityTypePointer`,
    );
  return problems;
}

function templateProblems(at: string, options: GenericOptions): string[] {
  if (options.signedTemplate === undefined) return [];
  if (typeof options.signedTemplate !== "string")
    return [`${at}.signedTemplate: expected a string such as "{timestamp}.{body}"`];
  const parts = compileTemplate(options.signedTemplate);
  if (typeof parts === "string") return [`${at}.signedTemplate: ${parts}`];
  const signsTimestamp = parts.some((p) => "timestamp" in p);
  if (signsTimestamp && options.timestampHeader === undefined)
    return [`${at}.signedTemplate: {timestamp} needs timestampHeader; set it or remove the placeholder`];
  if (!signsTimestamp && options.timestampHeader !== undefined)
    return [`${at}.signedTemplate: add {timestamp}; an unsigned timestampHeader protects nothing`];
  return [];
}
