// Claim ids through a JavaScript MCP client, whose numbers are float64:
// node claimid.mjs BINARY WORKSPACE BDS_ISSUE AGENT. The workspace is a bd
// v1.3 Dolt workspace with at least two open issues besides BDS_ISSUE,
// which bd itself claimed as AGENT with a row_lock beyond 2^53. Every
// claim_id the server returns must be a safe integer, and fence what it
// names when sent back as a number and as a string. Prints "ok".
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, dir, bds, agent] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--agent", agent, "--quiet"], cwd: dir, env: process.env, stderr: "inherit" });
const client = new Client({ name: "bd-claim-claimid", version: "1" });
await client.connect(transport);

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(Boolean(r.isError), false, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.structuredContent)}`);
  return r.structuredContent;
}

// A claim with a lease: heartbeat with the id as a number, close with it.
let c = await call("claim", { lease: "10m" });
assert.ok(Number.isSafeInteger(c.claim_id) && c.claim_id > 0, `claim_id ${c.claim_id}`);
await call("heartbeat", { id: c.issue.id, claim_id: c.claim_id });
let done = await call("close", { id: c.issue.id, claim_id: c.claim_id, reason: "done from JavaScript" });
assert.equal(done.issue.status, "closed");

// A claim without one: released with the id as a string.
c = await call("claim", {});
assert.ok(Number.isSafeInteger(c.claim_id), `claim_id ${c.claim_id}`);
const released = await call("release", { id: c.issue.id, claim_id: String(c.claim_id), reason: "handing back" });
assert.equal(released.issue.status, "open");

// bd's own claim, made as this agent: its id, read back, closes it.
c = await call("claim", { id: bds });
assert.ok(Number.isSafeInteger(c.claim_id), `bd's claim_id ${c.claim_id}`);
done = await call("close", { id: bds, claim_id: c.claim_id });
assert.equal(done.issue.status, "closed");

// A stale id is still refused: the fence is exact.
c = await call("claim", {});
const stale = await client.callTool({ name: "close", arguments: { id: c.issue.id, claim_id: c.claim_id + 1 } });
assert.equal(Boolean(stale.isError), true, JSON.stringify(stale.structuredContent));
assert.equal(stale.structuredContent.error.code, "ALREADY_CLAIMED");

await client.close();
console.log("ok");
