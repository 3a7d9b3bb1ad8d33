// Drives `bd-claim mcp` with the official TypeScript SDK client, as a
// client application would: node interop.mjs BINARY WORKSPACE ISSUE.
// ISSUE is a claimable issue of the workspace. Every check is an assertion:
// the script exits 1 on the first that fails, and prints "ok" at the end.
// The SDK's client validates every structuredContent against the tool's
// outputSchema, errors included.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, dir, issue] = process.argv.slice(2);

async function connect(...args) {
  const transport = new StdioClientTransport({ command: bin, args: ["mcp", ...args], cwd: dir, env: process.env, stderr: "ignore" });
  const client = new Client({ name: "bd-claim-ts-interop", version: "1" });
  await client.connect(transport);
  return client;
}

async function call(client, name, args, options) {
  const r = await client.callTool({ name, arguments: args }, undefined, options);
  return { isError: Boolean(r.isError), out: r.structuredContent };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const a = await connect("--agent", "ts-a", "--quiet");

// tools/list: titles, output schemas, the four hints, plain array types.
const { tools } = await a.listTools();
assert.deepEqual(tools.map((t) => t.name).sort(), ["claim", "close", "heartbeat", "reap", "release", "reset", "stats"]);
for (const t of tools) {
  assert.ok(t.title, t.name);
  assert.equal(t.outputSchema?.type, "object", t.name);
  for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    assert.equal(typeof t.annotations[hint], "boolean", `${t.name}.${hint}`);
  }
}
const claimTool = tools.find((t) => t.name === "claim");
for (const list of ["labels", "exclude_labels", "types"]) {
  assert.equal(claimTool.inputSchema.properties[list].type, "array", list);
}
assert.equal(claimTool.inputSchema.properties.min_priority.type, "integer");
assert.match(a.getInstructions(), /you are agent "ts-a"/);
assert.deepEqual(a.getServerCapabilities(), { tools: {} });

// Arrays, an integer priority and types in any case.
let r = await call(a, "claim", { dry_run: true, labels: [], exclude_labels: ["no-such-label"], types: ["BUG", "Task", "feature", "chore", "epic"], min_priority: 4 });
assert.equal(r.isError, false, JSON.stringify(r.out));
assert.ok(r.out.issue, JSON.stringify(r.out));
assert.deepEqual(r.out.filters.types, ["bug", "task", "feature", "chore", "epic"]);

// No work: a reason, always.
r = await call(a, "claim", { labels: ["no-such-label"] });
assert.equal(r.isError, false);
assert.equal(r.out.issue, null);
assert.ok(r.out.reason);

// Bad arguments: INVALID_ARGUMENT, in the arguments' terms.
for (const [args, message] of [
  [{ id: "" }, /^id is empty/],
  [{ id: null }, /argument id is null/],
  [{ lease: "-5m" }, /^lease: -5m is negative/],
  [{ explain: true }, /explain needs dry_run/],
  [{ min_priority: true }, /arguments min_priority and priority must be an integer/],
  [{ sort: "random" }, /unknown sort "random"/],
  [{ id: "x".repeat(1 << 20) }, /id is 1048576 characters long/],
  [{ labels: "backend" }, /argument labels must be an array of strings/],
]) {
  r = await call(a, "claim", args);
  assert.equal(r.isError, true, JSON.stringify(args).slice(0, 80));
  assert.equal(r.out.error.code, "INVALID_ARGUMENT");
  assert.match(r.out.error.message, message);
  assert.ok(!r.out.error.message.includes("--"), r.out.error.message);
}

// A claim with a lease, renewed by the server over three lease lengths:
// held by ts-a after twice its lease.
for (const lease of ["1s", "2s", "3s"]) {
  r = await call(a, "claim", { id: issue, lease });
  assert.equal(r.isError, false, JSON.stringify(r.out));
  const claimID = r.out.claim_id;
  await sleep(2 * 1000 * Number.parseInt(lease));
  const b = await connect("--agent", "ts-b", "--quiet");
  const taken = await call(b, "claim", { id: issue });
  assert.equal(taken.isError, true, `${lease}: the lease lapsed`);
  assert.equal(taken.out.error.code, "ALREADY_CLAIMED");
  assert.equal(taken.out.error.holder_claim_id, claimID);
  await b.close();
  r = await call(a, "release", { id: issue, claim_id: claimID });
  assert.equal(r.isError, false, JSON.stringify(r.out));
}

// A wait longer than the request timeout succeeds when the client resets
// its timeout on progress; it fails without.
const progress = [];
// (Progress comes every 5s: 3s to spare under the 8s timeout.)
r = await call(a, "claim", { labels: ["no-such-label"], wait: "14s" }, { timeout: 8000, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p) });
assert.equal(r.out.reason, "nothing became claimable within 14s");
assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[0, 14], [5, 14], [10, 14]]);
await assert.rejects(call(a, "claim", { labels: ["no-such-label"], wait: "14s" }, { timeout: 8000, onprogress: () => {} }), { code: -32001 });

// A cancelled wait ends; the server serves on.
const abort = new AbortController();
const cancelled = call(a, "claim", { labels: ["no-such-label"], wait: "30s" }, { signal: abort.signal });
await sleep(500);
abort.abort("cancelled by the test");
await assert.rejects(cancelled);
r = await call(a, "stats", {});
assert.equal(r.out.status, "ok");

// Two servers with one agent name: the second refuses, with the fix.
const twin = await connect("--agent", "ts-a", "--quiet");
assert.match(twin.getInstructions(), /agent ts-a is served already/);
r = await call(twin, "stats", {});
assert.equal(r.isError, true);
assert.equal(r.out.error.code, "INVALID_ARGUMENT");
assert.match(r.out.error.message, /--unique/);
await twin.close();

await a.close();
console.log("ok");
