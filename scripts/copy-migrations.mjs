// tsc copies no .sql files: the build copies the migrations next to the compiled migrate.js.
import { cpSync } from "node:fs";
cpSync("src/db/migrations", "dist/db/migrations", { recursive: true });
