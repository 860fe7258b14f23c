#!/usr/bin/env node
// Runs `redocly lint` (pinned in package.json, config in redocly.yaml) on ONE
// OpenAPI file and prints its problems as
//   <severity> <ruleId> <JSON pointer>: <message>
// (redocly's own formats give line:col, useless for a one-line generated
// document). Exit 0 only if redocly exited 0 and reported no error.
// Used by validate-openapi.sh; can be run on its own: node redocly-lint.mjs FILE
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "node_modules", "@redocly", "cli", "bin", "cli.js");
const config = join(here, "redocly.yaml");

const file = process.argv[2];
if (!file || process.argv.length !== 3) {
  console.error("usage: node redocly-lint.mjs FILE");
  process.exit(2);
}
if (!existsSync(cli)) {
  console.error(`redocly CLI not installed (${cli} missing): run tests/tools/install.sh`);
  process.exit(2);
}

const env = {
  ...process.env,
  REDOCLY_TELEMETRY: "off",
  REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
  REDOCLY_SUPPRESS_NOTIFICATIONS: "true",
};
const run = spawnSync(
  process.execPath,
  [cli, "lint", "--config", config, "--format=json", "--max-problems=200", file],
  { env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, timeout: 300_000 },
);
if (run.error) {
  console.error(`could not run redocly: ${run.error.message}`);
  process.exit(2);
}

let report = null;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = null;
}

// redocly prints a boxed Node 20 deprecation notice and progress lines on
// stderr; keep only the rest.
const stderr = (run.stderr || "")
  .split("\n")
  .filter((l) => l.trim() && !/[║╔╚]/.test(l) && !/^validating /.test(l))
  .join("\n");

if (!report || !report.totals || !Array.isArray(report.problems)) {
  console.log(`redocly could not lint the file (exit ${run.status}):`);
  console.log(stderr || run.stdout || "(no output)");
  process.exit(1);
}

for (const p of report.problems) {
  const where = (p.location || []).map((l) => l.pointer || "?").join(", ");
  console.log(`${p.severity} ${p.ruleId} ${where}: ${p.message}`);
}
const { errors, warnings } = report.totals;
if (run.status !== 0 || errors > 0) {
  console.log(`redocly ${report.version}: ${errors} error(s), ${warnings} warning(s) (exit ${run.status})`);
  if (errors === 0 && stderr) console.log(stderr);
  process.exit(1);
}
console.log(`redocly ${report.version}: 0 errors, ${warnings} warning(s)`);
