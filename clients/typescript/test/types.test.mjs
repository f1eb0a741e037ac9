// The declarations in types/ type-check (tsc --noEmit on typecheck.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

test("type declarations compile", () => {
  const dir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  const tsc = path.join(dir, "node_modules", "typescript", "bin", "tsc");
  const out = execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir, encoding: "utf8" });
  assert.equal(out.trim(), "");
});
