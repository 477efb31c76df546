import express5 from "express";
import express4 from "express4";
import fastify5 from "fastify";
import fastify4 from "fastify4";

/** Both supported majors of Express; the suites run once per major. */
export const expressMajors = [
  ["express 5", express5],
  ["express 4", express4 as unknown as typeof express5],
] as const;

/** Both supported majors of Fastify; the suites run once per major. */
export const fastifyMajors = [
  ["fastify 5", fastify5],
  ["fastify 4", fastify4 as unknown as typeof fastify5],
] as const;
