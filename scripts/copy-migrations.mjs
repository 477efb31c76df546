// tsc copies no .sql files: the build copies the migrations next to the compiled migrate.js. The target is cleared
// first, so a migration renamed or removed in src/ never lingers in dist/ to be applied twice.
import { cpSync, rmSync } from "node:fs";
rmSync("dist/db/migrations", { recursive: true, force: true });
cpSync("src/db/migrations", "dist/db/migrations", { recursive: true });
