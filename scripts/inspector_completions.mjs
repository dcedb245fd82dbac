// Completions through the client of MCP Inspector 2.x (@modelcontextprotocol/client, which the Inspector
// installs and is built on): its CLI has no completion method, its web UI and TUI call this one.
// Usage (from scripts/inspector.sh): node inspector_completions.mjs COMMAND ARGS...; prints one JSON object.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "sophrosyne-inspector-check", version: "1" });
await client.connect(new StdioClientTransport({ command, args }));
const complete = async (ref, name, value, context) =>
  (await client.complete({ ref, argument: { name, value }, ...(context ? { context: { arguments: context } } : {}) }))
    .completion.values;
const prompt = { type: "ref/prompt", name: "ground" };
const template = { type: "ref/resource", uri: "sophrosyne://{source}/{table}" };
console.log(
  JSON.stringify({
    prompt_table: await complete(prompt, "table", "emp"),
    prompt_column: await complete(prompt, "column", "hi", { table: "employees" }),
    prompt_source: await complete(prompt, "source", "de"),
    resource_table: await complete(template, "table", "dep", { source: "demo" }),
  }),
);
await client.close();
