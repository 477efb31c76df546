// The build starts from an empty dist/: a module renamed or removed in src/, or a chunk of an earlier bundle, must
// not linger there to be imported by a test or packed.
import { rmSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
