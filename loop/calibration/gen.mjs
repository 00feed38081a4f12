// Regenerates tokens.json: real tokenizer counts (cl100k_base, o200k_base,
// from the js-tiktoken npm package, which bundles its ranks) for texts of
// the kinds a ratchet request carries. TestEstimateCalibration compares
// the loop's tokenizer-free estimate with them.
//
//   npm install js-tiktoken@1.0.21 && node loop/calibration/gen.mjs
//
// Run from the repository root; the texts are stored in the JSON, so the
// test does not depend on the files staying as they are.
import { readFileSync, writeFileSync } from "node:fs";
import { getEncoding } from "js-tiktoken";

const cap = (s, n = 6000) => (s.length <= n ? s : s.slice(0, n));
const file = (p) => cap(readFileSync(p, "utf8"));
const samples = [
  ["prose: system prompt", file("loop/prompts/system.txt")],
  ["prose: compact prompt", file("loop/prompts/compact.txt")],
  ["prose: verification doc", file("docs/verification.md")],
  ["markdown: task file doc", file("docs/taskfile.md")],
  ["go: loop/plan.go", file("loop/plan.go")],
  ["go: tool/trim.go", file("tool/trim.go")],
  ["json: go test -json output", file("verify/testreport/testdata/go_mixed.jsonl")],
  ["json: tool schema", '{"type":"object","properties":{"path":{"type":"string","description":"the file to read, relative to the workspace root"},"offset_line":{"type":"integer"},"max_lines":{"type":"integer"}},"required":["path"],"additionalProperties":false}'],
  ["yaml: scripted turns", file("model/scripted/testdata/demo.yaml")],
  ["listing: numbered lines", Array.from({ length: 80 }, (_, i) => `${String(i + 1).padStart(5, "0")} ${"y".repeat(53)}`).join("\n")],
  ["log: compiler errors", Array.from({ length: 40 }, (_, i) => `./pkg/file${i}.go:${10 + i}:${3 + (i % 7)}: undefined: someIdentifier${i}`).join("\n")],
];
const encs = { cl100k_base: getEncoding("cl100k_base"), o200k_base: getEncoding("o200k_base") };
const out = samples.map(([name, text]) => ({
  name,
  text,
  bytes: Buffer.byteLength(text, "utf8"),
  cl100k_base: encs.cl100k_base.encode(text).length,
  o200k_base: encs.o200k_base.encode(text).length,
}));
writeFileSync("loop/calibration/tokens.json", JSON.stringify(out, null, 1) + "\n");
