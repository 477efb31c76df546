// tsc copies no .sql files: the build copies the migrations next to the compiled migrate.js. The target is cleared
// first, so a migration renamed or removed in src/ never lingers in dist/ to be applied twice. The dashboard's
// static files (HTML, script, styles: no front-end build) go next to the compiled dashboard the same way.
import { cpSync, rmSync } from "node:fs";
for (const dir of ["db/migrations", "dashboard/assets"]) {
  rmSync(`dist/${dir}`, { recursive: true, force: true });
  cpSync(`src/${dir}`, `dist/${dir}`, { recursive: true });
}
